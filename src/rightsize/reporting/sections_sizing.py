"""Report section and verdict for the re-extraction sizing (``metrics/sizing.json``).

Leads with the ask ("N GPU-hours on <GPU>, M TB, bound by ..."), shows the retired asserted
figures beside the measured ones once, then one row per scenario and model, each naming
whether its GPU figure was measured (on what) or estimated (how), and what each encoder
was measured on.
"""

from __future__ import annotations

from typing import Any

from rightsize.reporting import fmt
from rightsize.reporting.doc import Block, Heading, Note, Para, table
from rightsize.reporting.load import Source, get

OLD_FORMAT = "metrics/sizing.json is not a measured sizing (old format?): dvc repro sizing."


def _ask(d: dict[str, Any]) -> str | None:
    from rightsize.reporting.sizing_text import ask_sentence

    try:
        return ask_sentence(d)
    except (KeyError, TypeError, AttributeError):
        return None


def sizing_answer(src: Source) -> tuple[str, str]:
    """(short answer, sentence) for the verdict list."""
    from rightsize.reporting.sizing_text import hours_range

    if not src.ok:
        return "not run", src.note().rstrip(".") + "."
    sentence = _ask(src.data)
    if sentence is None:
        return "unreadable", OLD_FORMAT
    a = src.data["ask"]
    return hours_range(a["gpu_hours_low"], a["gpu_hours_high"]), sentence


def sizing_blocks(src: Source) -> list[Block]:
    """The sizing section: the ask, asserted vs measured, scenario rows, bench provenance."""
    from rightsize.reporting.sizing_text import hours_range

    blocks: list[Block] = [Heading("GPU and storage sizing: re-extraction", 3, "sizing")]
    if not src.ok:
        return blocks + [Note(f"{src.note()} (dvc repro sizing).")]
    d = src.data
    ask = _ask(d)
    if ask is None:
        return blocks + [Note(OLD_FORMAT)]
    blocks.append(Para(f"The ask: {ask}"))
    ba = d.get("asserted_vs_measured", {})
    if "measured" in ba:
        old, new = ba["asserted"], ba["measured"]
        est = "" if new["gpu_measured"] else " (estimated from measured FLOPs)"
        blocks.append(table(
            ["figure", "asserted before (retired params)", "measured now"],
            [["tokens per record", fmt.integer(old["tokens_per_record"]),
              f"{fmt.integer(new['tokens_per_record'])} ({new['model']} {new['size']}, "
              f"output shapes)"],
             ["storage", fmt.nbytes(old["storage_bytes"]), fmt.nbytes(new["storage_bytes"])],
             ["GPU time", hours_range(old["gpu_hours"], old["gpu_hours"]),
              hours_range(new["gpu_hours_low"], new["gpu_hours_high"]) + est]],
            f"The retired calculator's job: {fmt.integer(ba['records'])} ECG records, "
            f"{ba['layers_kept']} layers, {ba['dtype']}; the asserted side multiplied "
            f"50 tokens/s and 40 records/s per GPU typed into params.yaml."))
    rows = []
    for name, sc in d.get("scenarios", {}).items():
        for model, r in sc.get("models", {}).items():
            cpu = hours_range(r.get("cpu_hours"), r.get("cpu_hours"), "CPU")
            rows.append([f"{name} / {model}", fmt.integer(r["records"]),
                         fmt.integer(r["tokens"]),
                         f"{fmt.nbytes(r['storage_bytes'])} ({r['keep']}, "
                         f"{r['layers_kept']} layer(s), {r['dtype']})",
                         fmt.nbytes(r["storage_bytes_all_layers"]),
                         hours_range(r["gpu_hours_low"], r["gpu_hours_high"]),
                         "measured" if r["gpu_measured"] else "estimated", cpu, r["bound"]])
    blocks.append(table(["scenario / model", "records", "tokens", "storage", "all layers",
                         "GPU time", "GPU figure", "CPU preprocessing", "bound by"], rows,
                        "Estimated GPU figures: measured FLOPs per record at the "
                        "utilisation range of sizing.estimate, no GPU measurement. CPU "
                        "preprocessing: measured per core with a warm page cache."))
    prov = [[m, f"{b['family']} {b['size']}", fmt.integer(b["tokens_per_record"]),
             f"{fmt.number(b['flops_per_record'] / 1e9)} GFLOP",
             fmt.number(b.get("records_per_s")) + (" (extrapolated)"
                                                   if b.get("timing_extrapolated") else ""),
             fmt.number(b.get("preprocess_records_per_s_per_core")),
             f"{b['measured_on']} ({b['device']})"]
            for m, b in d.get("benches", {}).items()]
    gpu_files = ", ".join(f"{m}: {f}" for m, f in (get(d, "gpu_files") or {}).items())
    blocks.append(table(["model", "encoder", "tokens/record", "FLOPs/record",
                         "records/s", "preprocess rec/s/core", "measured on"], prov,
                        f"From metrics/encoders/<model>.json. Committed GPU files used: "
                        f"{gpu_files or 'none'}."))
    return blocks
