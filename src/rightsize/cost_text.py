"""``rightsize telemetry``'s text: a cost report as aligned tables (``rich``, else plain text).

Reads the report dict that ``metrics/telemetry/<run>.json`` holds; computes nothing new.
"""

from __future__ import annotations

import datetime as dt
import io
from collections.abc import Sequence
from typing import Any

from rightsize.account_parts import MEANING, checkpoint_notes, checkpoint_rows


def _fmt(v: Any, digits: int = 4) -> str:
    if v is None:
        return "-"
    if isinstance(v, bool):
        return "yes" if v else "no"
    if isinstance(v, int):
        return f"{v:,}"
    if isinstance(v, float):
        if v != v:
            return "nan"
        return f"{v:,.{digits}g}" if abs(v) < 1e4 else f"{v:,.0f}"
    return str(v)


def _time(t: float | None) -> str:
    if t is None:
        return "-"
    return dt.datetime.fromtimestamp(t, dt.timezone.utc).strftime("%Y-%m-%d %H:%M")


def _table(title: str, header: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    """Aligned table as text; numbers right-aligned (everything but the first column)."""
    try:
        from rich.console import Console
        from rich.table import Table
    except ImportError:  # plain-text fallback
        widths = [max(len(h), *(len(r[i]) for r in rows)) if rows else len(h)
                  for i, h in enumerate(header)]

        def line(cells: Sequence[str]) -> str:
            return "  ".join(c.ljust(w) if i == 0 else c.rjust(w)
                             for i, (c, w) in enumerate(zip(cells, widths, strict=True)))

        return "\n".join([title, line(header), *(line(r) for r in rows)]) + "\n"
    table = Table(box=None, pad_edge=False)
    for i, h in enumerate(header):
        table.add_column(h, justify="left" if i == 0 else "right", no_wrap=True)
    for r in rows:
        table.add_row(*r)
    buf = io.StringIO()
    Console(file=buf, width=200, color_system=None, force_terminal=False).print(table)
    return f"{title}\n{buf.getvalue()}"


def render_report(name: str, r: dict[str, Any]) -> str:
    """Headline numbers, projection and the per-launch table of one run."""
    st = r["step_time_s"]
    rows = [
        ("step tag / val tag", f"{r['step_tag']} / {r['val_tag'] or '-'}"),
        ("step time median s (p25-p75)",
         f"{_fmt(st['median'])} ({_fmt(st['p25'])}-{_fmt(st['p75'])})"),
        ("step deltas kept / dropped", f"{_fmt(st['n'])} / {_fmt(st['dropped'])}"),
        ("steps per epoch (val / records)",
         f"{_fmt(r['steps_per_epoch'])} ({_fmt(r['steps_per_epoch_from_val'])} / "
         f"{_fmt(r['steps_per_epoch_from_records'])})"),
        ("epoch hours / GPU-hours per epoch",
         f"{_fmt(r['epoch_hours'])} / {_fmt(r['gpu_hours_per_epoch'])}"),
        ("max step / epochs run / val epochs",
         f"{_fmt(r['max_step'])} / {_fmt(r['epochs_run'])} / {_fmt(r['val_epochs'])}"),
        ("active / calendar hours (overhead)",
         f"{_fmt(r['active_hours'])} / {_fmt(r['calendar_hours'])} "
         f"(x{_fmt(r['calendar_overhead'], 3)})"),
        ("launches / segments / header-only",
         f"{r['launches']} / {r['segments']} / {r['header_only_files']}"),
        ("re-logged steps", _fmt(r["relogged_steps"])),
        ("best epoch (value)", f"{_fmt(r['best_epoch'])} ({_fmt(r['best_val'])})"),
        ("damaged records (bytes)", f"{r['damaged_records']} ({_fmt(r['damaged_bytes'])})"),
    ]
    if "mfu" in r:
        rows.append(("units/s / MFU", f"{_fmt(r['units_per_s'])} / {_fmt(r['mfu'], 3)}"))
    out = [_table(f"cost report: {name}", ("metric", "value"), rows)]
    p = r.get("projection")
    if p:
        out.append(_table(
            f"projection: {p['records']:,} records -> {p['steps_per_epoch']:,} steps/epoch, "
            f"{_fmt(p['hours_per_epoch'])} h/epoch",
            ("epochs", "compute h", "GPU-h", "calendar h"),
            [(str(s["epochs"]), _fmt(s["compute_hours"]), _fmt(s["gpu_hours"]),
              _fmt(s["calendar_hours"])) for s in p["schedules"]]))
    out += _account_tables(r)
    out.append(_table(
        "launches", ("#", "host", "pid", "steps", "first", "last", "start (UTC)", "hours",
                      "median s"),
        [(str(i), row["host"] or "-", str(row["pid"] or "-"),
          _fmt(row["steps"]), _fmt(row["first_step"]), _fmt(row["last_step"]),
          _time(row["start_time"]),
          _fmt(None if row["start_time"] is None or row["end_time"] is None
               else (row["end_time"] - row["start_time"]) / 3600, 3),
          _fmt(row["median_step_s"])) for i, row in enumerate(r["segment_table"], 1)]))
    return "\n".join(out)


def _account_tables(r: dict[str, Any]) -> list[str]:
    """Where the calendar went, checkpoint advice, epochs after best and the ETA."""
    acc, cal = r.get("account") or {}, r.get("calendar_hours")
    out = []
    if acc and cal:
        rows = [(k, _fmt(acc[k], 4), f"{100 * acc[k] / cal:.1f} %", what)
                for k, what in MEANING.items()]
        rows.append(("total", _fmt(acc["total"], 4), f"{100 * acc['total'] / cal:.1f} %",
                     "= calendar hours"))
        out.append(_table(f"where the {_fmt(cal, 3)} calendar hours went",
                          ("part", "hours", "share", "what"), rows))
    c = r.get("checkpoints") or {}
    if c:
        lines = [f"advice: {c['advice']}", *checkpoint_notes(c)]
        out.append(_table("preemptions and checkpoints", ("metric", "value"),
                          checkpoint_rows(c)) + "\n".join(lines) + "\n")
    if r.get("epochs_after_best") is not None:
        out.append(f"epochs after the best: {_fmt(r['epochs_after_best'], 3)} "
                   f"({_fmt(r['compute_hours_after_best'], 3)} compute hours after epoch "
                   f"{_fmt(r['best_epoch'])})\n")
    e = r.get("eta")
    if e:
        out.append(_table(
            f"ETA to {e['target_epochs']} epochs (as of {_time(e['as_of_wall_time'])} UTC, "
            "the last event read)", ("metric", "value"),
            [("remaining steps (epochs)",
              f"{_fmt(e['remaining_steps'])} ({_fmt(e['remaining_epochs'], 3)})"),
             ("step time s", f"{_fmt(e['step_time_s'])} ({e['step_time_from']})"),
             ("remaining compute hours", _fmt(e["remaining_compute_hours"])),
             ("remaining calendar hours (x run overhead)", _fmt(e["remaining_calendar_hours"])),
             ("finish (UTC, estimate)", _time(e["finish_wall_time"]))]))
    if r.get("partial_tail_bytes"):
        out.append(f"live file: {r['partial_tail_bytes']} bytes of an unfinished last record "
                   "at the end of the newest file (still being written; not damage)\n")
    return out


def render_runs(reports: dict[str, dict[str, Any]]) -> str:
    """One summary row per run."""
    header = ("run", "launches", "segments", "steps/epoch", "median step s", "epochs run",
              "active h", "calendar h", "best epoch", "best val", "damaged")
    rows = [(name, _fmt(r["launches"]), _fmt(r["segments"]), _fmt(r["steps_per_epoch"]),
             _fmt(r["step_time_s"]["median"]), _fmt(r["epochs_run"]), _fmt(r["active_hours"]),
             _fmt(r["calendar_hours"]), _fmt(r["best_epoch"]), _fmt(r["best_val"]),
             _fmt(r["damaged_records"])) for name, r in reports.items()]
    return _table(f"{len(reports)} runs", header, rows)
