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

import numpy as np

from rightsize import fmt
from rightsize.fmt import get, num
from rightsize.reporting.config import ReportConfig
from rightsize.reporting.load import ReportInputs, Source

GPU_QUESTION = "Do probe training and evaluation need a GPU?"
FUSION_QUESTION = "Does fusion beat concatenation (test MAE)?"
SIZING_QUESTION = "What would the configured re-extraction need?"
TOKENS_QUESTION = "Is probe training still CPU-light at token-level ECG?"


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
                       "Not run: no metrics/eval/<probe>.json yet (dvc repro train).")
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
            f"{where} ({per}: seconds of training and evaluation in process, without "
            f"interpreter start-up and imports; budget {fmt.seconds(cfg.cpu_budget_s)}).")
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


def _seed_maes(d: Any) -> dict[str, float]:
    """``{"r<k>": test MAE}`` of every seed replica in one eval file."""
    seeds = get(d, "seeds")
    if not isinstance(seeds, dict):
        return {}
    out = {k: num(v, "test_mae") for k, v in seeds.items() if isinstance(v, dict)}
    return {k: v for k, v in out.items() if v is not None}


def _paired_interval(a: Any, b: Any) -> tuple[float, float] | None:
    """Percentile interval of ``MAE_a - MAE_b`` over the two files' shared bootstrap resamples
    (same test rows, resample count and seed), or None when they are not paired."""
    sa, sb = get(a, "bootstrap.test_mae"), get(b, "bootstrap.test_mae")
    same = all(num(a, k) == num(b, k) for k in ("test.n", "test.n_bootstrap", "ci"))
    if not (isinstance(sa, list) and isinstance(sb, list) and sa and len(sa) == len(sb)
            and same):
        return None
    diff = np.asarray(sa, dtype=np.float64) - np.asarray(sb, dtype=np.float64)
    tail = 100.0 * (1.0 - (num(a, "ci") or 0.95)) / 2.0
    lo, hi = np.percentile(diff, [tail, 100.0 - tail])
    return float(lo), float(hi)


def fusion_verdict(inputs: ReportInputs) -> Verdict:
    """Fused vs concat test MAE: the seed-paired difference against its spread across seeds,
    and seed 0's difference against its paired bootstrap interval, said in words."""
    fused, concat = inputs.evals.get("fused"), inputs.evals.get("concat")
    if fused is None or concat is None or not (fused.ok and concat.ok):
        return Verdict("fusion", FUSION_QUESTION, "not run",
                       "Not run: needs metrics/eval/fused.json and metrics/eval/concat.json.")
    f, c = fused.data, concat.data
    fm, cm = _seed_maes(f), _seed_maes(c)
    paired = sorted(set(fm) & set(cm), key=lambda k: int(k[1:]) if k[1:].isdigit() else 0)
    if not paired:
        fm, cm, paired = {"r0": num(f, "test.mae")}, {"r0": num(c, "test.mae")}, ["r0"]
    diffs = np.asarray([cm[k] - fm[k] for k in paired], dtype=np.float64)  # > 0: fused better
    mean = float(diffs.mean())
    sd = float(diffs.std(ddof=1)) if diffs.size > 1 else None
    beyond_seeds = sd is not None and abs(mean) > sd
    k = diffs.size
    seed_words = (f"over {k} paired seeds concat − fused = {fmt.number(mean)} ± "
                  f"{fmt.number(sd)} (mean ± sd): the difference "
                  f"{'exceeds' if beyond_seeds else 'does not exceed'} the seed spread"
                  if sd is not None else
                  f"with one seed concat − fused = {fmt.number(mean)} and no seed spread to "
                  f"compare it with (train.seeds: 1)")
    interval = _paired_interval(c, f)
    d0 = (num(c, "test.mae") or 0.0) - (num(f, "test.mae") or 0.0)
    if interval is None:
        boot_words = "no paired bootstrap interval (the eval files do not share resamples)"
        beyond_boot = False
    else:
        lo, hi = interval
        beyond_boot = lo > 0 or hi < 0
        boot_words = (f"for seed 0 the difference {fmt.number(d0)} has paired bootstrap "
                      f"{fmt.number(100 * (num(c, 'ci') or 0.95), 2)} % interval "
                      f"[{fmt.number(lo)}, {fmt.number(hi)}], which "
                      f"{'excludes' if beyond_boot else 'includes'} 0")
    if beyond_seeds and beyond_boot and mean > 0 and d0 > 0:
        answer, lead = "Yes", "Yes, beyond both the seed spread and the test-set resampling"
    elif beyond_seeds and beyond_boot and mean < 0 and d0 < 0:
        answer, lead = "No", "No: concatenation is better, beyond both"
    else:
        answer = "Not distinguishable"
        lead = ("Not distinguishable: the difference is within the seed spread or the "
                "paired bootstrap interval")
    fused_s = (f"fused {fmt.number(num(f, 'test.mae_mean'))} ± {fmt.number(num(f, 'test.mae_sd'))}"
               f", concat {fmt.number(num(c, 'test.mae_mean'))} ± "
               f"{fmt.number(num(c, 'test.mae_sd'))}")
    return Verdict("fusion", FUSION_QUESTION, answer,
                   f"{lead} (test MAE, lower is better; {fused_s} across seeds): "
                   f"{seed_words}; {boot_words}.")


def token_cost_verdict(src: Source, cfg: ReportConfig, seeds: int = 1) -> Verdict:
    """The fused probe at each measured ECG token count (``metrics/token_cost.json``), one
    seed, against ``report.cpu_budget_s``; the budget is judged on ``seeds`` replicas
    (``train.seeds``) at the largest count, estimated as that many times one seed."""
    if not src.ok:
        return Verdict("token_cost", TOKENS_QUESTION, "not run",
                       _sentence(f"{src.note()} (dvc repro token_cost)"))
    d = src.data
    cases = [c for c in (get(d, "cases") or {}).values() if isinstance(c, dict)
             and num(c, "ecg_tokens") is not None and num(c, "train_eval_s") is not None]
    cases.sort(key=lambda c: num(c, "ecg_tokens"))
    tokens = [c for c in cases if num(c, "ecg_tokens") > 1] or cases
    if not tokens:
        return Verdict("token_cost", TOKENS_QUESTION, "not run",
                       f"Not run: {src.path} holds no token count.")
    top = tokens[-1]
    per = ", ".join(f"{fmt.seconds(num(c, 'train_eval_s'))} at {fmt.integer(num(c, 'ecg_tokens'))}"
                    for c in tokens)
    basis = "; ".join(sorted({str(c.get("basis", "")) for c in tokens}))
    worst = num(top, "train_eval_s") * seeds
    within = worst <= cfg.cpu_budget_s
    estimate = (f"; train.seeds {seeds} at {fmt.integer(num(top, 'ecg_tokens'))} tokens: about "
                f"{fmt.seconds(worst)} (an estimate: {seeds} times one seed; the replicas "
                "train together in one process, which costs less)" if seeds > 1 else "")
    text = (f"probe training at token-level ECG: fused train + evaluate {per} tokens on "
            f"{_hardware_phrase(get(d, 'hardware') or {})} (one seed, whole process; {basis}),"
            f" peak RSS {fmt.megabytes(num(top, 'peak_rss_mb'))} at "
            f"{fmt.integer(num(top, 'ecg_tokens'))}{estimate}; within the CPU budget "
            f"({fmt.seconds(cfg.cpu_budget_s)}): {'yes' if within else 'no'}")
    return Verdict("token_cost", TOKENS_QUESTION, "Yes" if within else "No",
                   f"{'Yes' if within else 'No'}: {text}.")


def all_verdicts(inputs: ReportInputs, cfg: ReportConfig, seeds: int = 1) -> list[Verdict]:
    """Every verdict in report order: GPU need, fusion vs concat, token-level ECG's cost
    (at ``seeds`` replicas: ``train.seeds``), re-extraction, then one per rescued run."""
    out = [probe_gpu_verdict(inputs, cfg), fusion_verdict(inputs),
           token_cost_verdict(inputs.token_cost, cfg, seeds), sizing_verdict(inputs.sizing)]
    out += [run_verdict(r, inputs.telemetry[r]) for r in inputs.runs]
    return out
