"""Markdown of ``probes_e2e_bench.py``'s results file (standard library only)."""

from __future__ import annotations

import argparse
from typing import Any

Case = tuple[str, int]
PHASES = ("interpreter start-up + exit", "imports", "params", "manifest load",
          "input moments + PCA", "model build", "training", "evaluation", "missing-modality",
          "checkpoint write", "checkpoint read", "events + curve write", "metrics write",
          "other")
HEAVY = ("torch", "sklearn", "scipy", "pandas", "sympy", "pyarrow")
GOAL = 5.0


def _label(case: Case) -> str:
    probe, fd = case
    return f"{probe} d={fd}" if probe == "fused" else probe


def best(runs: list[dict[str, Any]]) -> dict[str, Any]:
    """The fastest run, with every run's seconds attached."""
    out = dict(min(runs, key=lambda r: r["wall_s"]))
    out["runs_s"] = [r["wall_s"] for r in runs]
    return out


def _mae(r: dict[str, Any]) -> str:
    return f"{r['test_mae']:.2f}" if "test_mae" in r else "—"


def _rows(cases: list[Case], whos: list[str], runs: dict) -> tuple[list[str], dict]:
    cols = [f"{w} s" for w in whos] + ["calibration s"] + [f"{w} speed-up" for w in whos]
    cols += [f"{w} peak RSS MiB" for w in whos] + ["calibration peak RSS MiB"]
    cols += [f"{w} test MAE" for w in whos] + ["calibration test MAE"]
    lines = ["| case | " + " | ".join(cols) + " |", "|---|" + "---:|" * len(cols)]
    sums: dict[str, dict[str, float]] = {}
    for case in cases:
        row = {w: best(runs[(w, case)]) for w in (*whos, "calibration")}
        cal = row["calibration"]["wall_s"]
        cells = [f"{row[w]['wall_s']:.2f}" for w in whos] + [f"{cal:.2f}"]
        cells += [f"{cal / row[w]['wall_s']:.1f}x" for w in whos]
        cells += [f"{row[w]['rss_mb']:.0f}" for w in (*whos, "calibration")]
        cells += [_mae(row[w]) for w in (*whos, "calibration")]
        lines.append(f"| {_label(case)} | " + " | ".join(cells) + " |")
        if case[1] == 256:
            for w in (*whos, "calibration"):
                s = sums.setdefault(w, {"wall_s": 0.0, "rss_mb": 0.0})
                s["wall_s"] += row[w]["wall_s"]
                s["rss_mb"] = max(s["rss_mb"], row[w]["rss_mb"])
    if sums:
        cal = sums["calibration"]["wall_s"]
        cells = [f"**{sums[w]['wall_s']:.2f}**" for w in whos] + [f"{cal:.2f}"]
        cells += [f"**{cal / sums[w]['wall_s']:.1f}x**" for w in whos]
        cells += [f"{sums[w]['rss_mb']:.0f}" for w in (*whos, "calibration")]
        cells += [""] * (len(whos) + 1)
        lines.append("| **all four (d=256)** | " + " | ".join(cells) + " |")
    return lines, sums


def _goals(cases: list[Case], whos: list[str], runs: dict, sums: dict) -> list[str]:
    out = []
    if sums:
        o, c = sums["ours"]["wall_s"], sums["calibration"]["wall_s"]
        out.append(f"- all four probes, train + evaluate as whole processes, >= {GOAL:.0f}x the "
                   f"calibration workload: {c / o:.1f}x ({o:.2f} s vs {c:.2f} s) -> "
                   f"**{'met' if c / o >= GOAL else 'MISSED'}**")
    if ("fused", 1024) in cases:
        o = best(runs[("ours", ("fused", 1024))])["wall_s"]
        c = best(runs[("calibration", ("fused", 1024))])["wall_s"]
        out.append(f"- fused d=1024 >= {GOAL:.0f}x: {c / o:.1f}x ({o:.2f} s vs {c:.2f} s) -> "
                   f"**{'met' if c / o >= GOAL else 'MISSED'}**")
    if "before" in whos:
        worst = []
        for case in cases:
            o = max(best(runs[("ours", case)])["rss_mb"], 0)
            b = best(runs[("before", case)])["rss_mb"]
            worst.append((o - b, _label(case), o, b))
        d, lab, o, b = max(worst)
        out.append(f"- peak RSS per process does not grow: largest change {d:+.0f} MiB "
                   f"({lab}: {o:.0f} vs {b:.0f} MiB before) -> "
                   f"**{'met' if d <= 5 else 'MISSED'}** (5 MiB allowance for noise)")
    return out


def _budget(budgets: dict, who: str, cases: list[Case]) -> list[str]:
    lines = [f"| stage ({who}) | " + " | ".join(PHASES) + " | total s | peak RSS MiB |"
             " heavy modules loaded |",
             "|---|" + "---:|" * (len(PHASES) + 2) + "---|"]
    for case in cases:
        for st in budgets.get((who, case), []):
            ph = st["phases"]
            cells = [f"{ph[p]:.2f}" if ph.get(p) else "" for p in PHASES]
            mods = ", ".join(m for m in HEAVY if m in st["modules"]) or "—"
            name = st["stage"] + (" (d=1024)" if case[1] == 1024 else "")
            lines.append(f"| {name} | " + " | ".join(cells)
                         + f" | {st['wall_s']:.2f} | {st['rss_mb']:.0f} | {mods} |")
    return lines


def render(args: argparse.Namespace, info: dict[str, str], cases: list[Case],
           whos: list[str], runs: dict, budgets: dict, stage_cmds: dict,
           seconds: float) -> str:
    """The whole results file."""
    rows, sums = _rows(cases, whos, runs)
    out = ["# End-to-end probe speed (as `dvc repro` runs the probe stages)", "",
           f"Generated by `benchmarks/probes_e2e_bench.py` in {seconds / 60:.1f} min: pooled "
           f"manifest (`max_clips` 1, {args.subjects} subjects, echo 1024-d, ECG 768-d), "
           f"1 thread, params.yaml's train/evaluate blocks, fastest of {args.runs} "
           "interleaved runs per contender and case. A probe's time is the sum of its "
           "stage processes' wall times; peak RSS is the largest of its processes "
           "(`wait4`).", "", "## Machine", ""]
    out += [f"- {k}: {v}" for k, v in info.items()]
    out += ["- the box was shared with other jobs during the run (2 cores, four "
            "concurrent sessions): read the ratios, not the seconds", "",
            "## Whole process", ""]
    out += rows
    out += ["", "## Goals", ""]
    out += _goals(cases, whos, runs, sums)
    for who in whos:
        out += ["", f"## Stage commands ({who})", ""]
        out += [f"- `{stage}`: `{cmd}`" for stage, _p, cmd in stage_cmds[who]]
    for who in whos:
        out += ["", f"## Time budget per stage ({who}), seconds", "",
                "One run of each stage under `stage_budget.py` (phases exclude the phases "
                "and imports nested in them; `interpreter start-up + exit` = process wall "
                "minus in-process time).", ""]
        out += _budget(budgets, who, cases)
    out += ["", "## Every run (wall s)", ""]
    for key, rs in sorted(runs.items(), key=lambda kv: (kv[0][1], kv[0][0])):
        out.append(f"- {key[0]} {_label(key[1])}: "
                   + ", ".join(f"{r['wall_s']:.2f}" for r in rs))
    return "\n".join(out) + "\n"
