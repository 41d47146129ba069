"""The verdicts the report opens with, each carrying the measurement behind it.

* :func:`probe_gpu_verdict` — do probe training and evaluation need a GPU? (measured
  wall-clock and peak memory on the stated hardware, against ``report.cpu_budget_s``)
* :func:`sizing_verdict` — what the configured re-extraction would need (GPU-hours on
  which GPU, measured or estimated, storage, the bound, whether it fits the disk)
* :func:`run_verdict` — per rescued run: cost per epoch, epochs actually run, projection
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from rightsize.reporting import fmt
from rightsize.reporting.config import ReportConfig
from rightsize.reporting.load import ReportInputs, Source, get, num

GPU_QUESTION = "Do probe training and evaluation need a GPU?"
SIZING_QUESTION = "What would the configured re-extraction need?"


@dataclass(frozen=True)
class Verdict:
    """One answer: ``key`` (stable id), the question, a short answer and the full sentence."""

    key: str
    question: str
    answer: str      # short: "No", "Yes", "not run", "312 GPU-h", ...
    text: str        # the sentence shown, with the numbers behind the answer

    def as_dict(self) -> dict[str, str]:
        """Plain dict for ``--json``."""
        return {"key": self.key, "question": self.question, "answer": self.answer,
                "text": self.text}


def _sentence(text: str) -> str:
    return text[:1].upper() + text[1:] + "."


def _hardware_phrase(hw: Any) -> str:
    cpu = get(hw, "cpu") or "unknown CPU"
    parts = [str(cpu)]
    cores, threads = get(hw, "cores"), get(hw, "threads")
    if cores is not None:
        parts.append(f"{cores} cores")
    if threads is not None:
        parts.append(f"{threads} thread{'s' if threads != 1 else ''}")
    torch = get(hw, "torch")
    if torch:
        parts.append(f"torch {torch}")
    return ", ".join(parts)


def probe_total_seconds(data: Any) -> float | None:
    """``wall_clock_s.total`` of one eval file, else train + eval when both are there."""
    total = num(data, "wall_clock_s.total")
    if total is None:
        train, ev = num(data, "wall_clock_s.train"), num(data, "wall_clock_s.eval")
        if train is not None and ev is not None:
            total = train + ev
    return total


def peak_rss_mb(evals: dict[str, Source], footprint: Source) -> float | None:
    """Largest peak RSS (MB) over the eval files' ``peak_rss_mb*`` keys and footprint's."""
    values = [num(s.data, k) for s in evals.values() if s.ok and isinstance(s.data, dict)
              for k in s.data if k.startswith("peak_rss_mb")]
    rss = get(footprint.data, "peak_rss_mb") if footprint.ok else None
    if isinstance(rss, dict):
        values += [num(rss, k) for k in rss]
    values = [v for v in values if v is not None]
    return max(values) if values else None


def probe_gpu_verdict(inputs: ReportInputs, cfg: ReportConfig) -> Verdict:
    """Answer the GPU question from ``metrics/eval/<probe>.json`` (and footprint's RSS)."""
    present = {p: s.data for p, s in inputs.evals.items() if s.ok}
    if not present:
        return Verdict("probe_gpu", GPU_QUESTION, "not run",
                       "Not run: no metrics/eval/<probe>.json yet (dvc repro evaluate).")
    totals = {p: probe_total_seconds(d) for p, d in present.items()}
    measured = {p: t for p, t in totals.items() if t is not None}
    total = sum(measured.values())
    peak = peak_rss_mb(inputs.evals, inputs.footprint)
    hw = next(iter(present.values())).get("hardware", {})
    devices = sorted({str(get(d, "hardware.device", "cpu")) for d in present.values()})
    on_gpu = [d for d in devices if not d.lower().startswith("cpu")]
    missing = [p for p in inputs.probes if p not in measured]
    where = f"{_hardware_phrase(hw)}, peak RSS {fmt.megabytes(peak)}"
    n = len(measured)
    if on_gpu:
        return Verdict(
            "probe_gpu", GPU_QUESTION, "not measured on CPU",
            f"Not measured on CPU: the probes ran on {', '.join(on_gpu)} "
            f"({fmt.seconds(total)} for {fmt.count_word(n)} probes, {where}); "
            "set train.device: cpu to measure the CPU cost.")
    if missing:
        shown = ", ".join(f"{p} {fmt.seconds(t)}" for p, t in measured.items())
        return Verdict(
            "probe_gpu", GPU_QUESTION, "incomplete",
            f"Incomplete: {fmt.count_word(n)} of {fmt.count_word(len(inputs.probes))} probes "
            f"measured ({shown or 'none with wall-clock'}) on {where}; "
            f"not measured: {', '.join(missing)}.")
    per = ", ".join(f"{p} {fmt.seconds(t)}" for p, t in measured.items())
    if total <= cfg.cpu_budget_s:
        return Verdict(
            "probe_gpu", GPU_QUESTION, "No",
            f"No: all {fmt.count_word(n)} probes train+evaluate in {fmt.seconds(total)} on "
            f"{where} ({per}; budget {fmt.seconds(cfg.cpu_budget_s)}).")
    return Verdict(
        "probe_gpu", GPU_QUESTION, "Yes",
        f"Yes: on CPU the {fmt.count_word(n)} probes take {fmt.seconds(total)}, over the "
        f"{fmt.seconds(cfg.cpu_budget_s)} budget (report.cpu_budget_s), on {where} ({per}).")


def sizing_verdict(sizing: Source) -> Verdict:
    """Answer the re-extraction question from ``metrics/sizing.json`` (the measured ask)."""
    from rightsize.reporting.sections_sizing import sizing_answer

    answer, text = sizing_answer(sizing)
    return Verdict("sizing", SIZING_QUESTION, answer, text)


def schedule_phrase(row: Any) -> str:
    """``12 epochs: 30.1 h compute, 241 GPU-h, 54.2 h calendar``."""
    epochs = get(row, "epochs")
    parts = [f"{fmt.number(num(row, 'compute_hours'))} h compute",
             f"{fmt.number(num(row, 'gpu_hours'))} GPU-h"]
    if num(row, "calendar_hours") is not None:
        parts.append(f"{fmt.number(num(row, 'calendar_hours'))} h calendar")
    return f"{fmt.number(epochs)} epoch{'s' if epochs != 1 else ''}: " + ", ".join(parts)


def run_verdict(name: str, tel: Source) -> Verdict:
    """Cost per epoch, epochs run and projection of one rescued run."""
    question = f"What did run {name} cost?"
    if not tel.ok:
        return Verdict(f"run:{name}", question, "not run", _sentence(tel.note()))
    d = tel.data
    gph = num(d, "gpu_hours_per_epoch")
    sentences = [
        f"One epoch costs {fmt.number(gph)} GPU-hours ({fmt.hours(num(d, 'epoch_hours'))} "
        f"wall-clock: {fmt.integer(num(d, 'steps_per_epoch'))} steps at a median "
        f"{fmt.number(num(d, 'step_time_s.median'))} s/step)",
        f"it ran {fmt.number(num(d, 'epochs_run'))} epochs (last step "
        f"{fmt.integer(num(d, 'max_step'))}) in {fmt.hours(num(d, 'active_hours'))} active over "
        f"{fmt.hours(num(d, 'calendar_hours'))} calendar across "
        f"{fmt.integer(num(d, 'launches'))} launches",
    ]
    schedules = get(d, "projection.schedules")
    if isinstance(schedules, list) and schedules:
        records = num(d, "projection.records")
        at = f" at {fmt.integer(records)} records" if records is not None else ""
        sentences.append(f"projected{at}: " + "; ".join(schedule_phrase(r) for r in schedules))
    else:
        sentences.append("no projection configured")
    return Verdict(f"run:{name}", question, f"{fmt.number(gph)} GPU-h/epoch",
                   "; ".join(sentences) + ".")


def all_verdicts(inputs: ReportInputs, cfg: ReportConfig) -> list[Verdict]:
    """Every verdict in report order: GPU need, re-extraction, then one per rescued run."""
    out = [probe_gpu_verdict(inputs, cfg), sizing_verdict(inputs.sizing)]
    out += [run_verdict(r, inputs.telemetry[r]) for r in inputs.runs]
    return out
