"""Words for a sizing result: the one-line ask and (label, value) rows for the CLI table.

Every figure says where it came from: measured (and on what) or estimated (and how).
Pure formatting over the JSON that :func:`rightsize.sizing.plan.size_all` returns (the
``metrics/sizing.json`` file); ``rightsize sizing`` prints :func:`table_rows` and the report
uses :func:`ask_sentence`, so the CLI and the report say the same thing.
"""

from __future__ import annotations

from typing import Any

from rightsize.reporting.fmt import nbytes, yes_no


def hours_range(low: float | None, high: float | None, what: str = "GPU") -> str:
    """``1.2 GPU-hours`` for a measured figure, ``1.2-3 GPU-hours`` for an estimate range.

    Under a hundredth of an hour the unit becomes minutes, under a minute seconds.
    """
    if low is None or high is None:
        return "not measured"
    top = max(abs(low), abs(high))
    scale, unit = (1.0, "hours") if top >= 0.01 else (
        (60.0, "minutes") if top * 60 >= 1 else (3600.0, "seconds"))
    lo, hi = low * scale, high * scale
    span = _num(lo) if abs(hi - lo) <= 1e-12 * max(abs(hi), 1.0) else f"{_num(lo)}-{_num(hi)}"
    return f"{span} {what}-{unit}"


def _num(x: float) -> str:
    if x == 0:
        return "0"
    if abs(x) >= 100:
        return f"{x:,.0f}"
    if abs(x) >= 1:
        return f"{x:.3g}"
    return f"{x:.2g}"


def ask_sentence(result: dict[str, Any]) -> str:
    """"N GPU-hours on <GPU>, M TB, bound by ..." with where each number came from."""
    a = result["ask"]
    gpu = hours_range(a["gpu_hours_low"], a["gpu_hours_high"])
    if a["gpu_measured"]:
        where = a["gpu_source"]
    else:
        est = result["estimate"]
        where = (f"{est['gpu']} (estimated, no GPU measurement: measured FLOPs at "
                 f"{est['utilisation_low']:.0%}-{est['utilisation_high']:.0%} of "
                 f"its {est['peak_tflops']:g} TFLOP/s peak)")
    disk = result["disk"]
    fits = []
    if a["fits_free_space"] is not None:
        fits.append(f"fits the {nbytes(disk['free_bytes'])} free at {disk['path']}: "
                    f"{yes_no(a['fits_free_space'])}")
    if disk.get("writable") is False:
        fits.append(f"{disk['path']} is NOT writable")
    if a["fits_quota"] is not None:
        fits.append(f"the {nbytes(disk['quota_bytes'])} quota: {yes_no(a['fits_quota'])}")
    rows = result["scenarios"][a["scenario"]]["models"]
    records = ", ".join(f"{m} {rows[m]['records']:,} records" for m in a["models"].split(","))
    return (f"{gpu} on {where}, {nbytes(a['storage_bytes'])}, bound by "
            f"{a['bound']} ({a['scenario']}: {records}; {'; '.join(fits) or 'no disk check'}).")


def table_rows(result: dict[str, Any]) -> list[tuple[str, str]]:
    """(label, value) rows: the ask, then one row per scenario and model, then before/after."""
    rows: list[tuple[str, str]] = [("ask", ask_sentence(result))]
    for name, sc in result["scenarios"].items():
        for model, r in sc["models"].items():
            cpu = hours_range(r["cpu_hours"], r["cpu_hours"], "CPU")
            rows.append((f"{name} / {model}",
                         f"{r['records']:,} records, {r['tokens']:,} tokens, "
                         f"{nbytes(r['storage_bytes'])} ({r['keep']}, {r['layers_kept']} "
                         f"layer(s), {r['dtype']}); "
                         f"{hours_range(r['gpu_hours_low'], r['gpu_hours_high'])} "
                         f"({'measured' if r['gpu_measured'] else 'estimated'}); {cpu}; "
                         f"bound by {r['bound']}"))
    ba = result["asserted_vs_measured"]
    if "measured" in ba:
        old, new = ba["asserted"], ba["measured"]
        rows.append(("asserted before vs measured",
                     f"{ba['records']:,} ECG records: tokens/record {old['tokens_per_record']} "
                     f"-> {new['tokens_per_record']}; storage "
                     f"{nbytes(old['storage_bytes'])} -> "
                     f"{nbytes(new['storage_bytes'])}; "
                     f"{hours_range(old['gpu_hours'], old['gpu_hours'])} -> "
                     f"{hours_range(new['gpu_hours_low'], new['gpu_hours_high'])}"
                     f"{'' if new['gpu_measured'] else ' (estimated)'}"))
    for model, b in result["benches"].items():
        rows.append((f"bench {model}", f"{b['family']} {b['size']}, measured on "
                                       f"{b['measured_on']} ({b['device']})"))
    return rows
