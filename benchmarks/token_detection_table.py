"""Render ``token_detection.jsonl`` (benchmarks/token_detection.py) as the detection table.

One row per (ECG tokens, train subjects, event leads, energy), pooling the cohort seeds run:
the share of fused replicas whose validation-chosen head puts at least ``FOUND`` on the event,
that head's test weight (mean, sd), the told learner's weight beside its null, and the fused
probe's paired gain over concat (concat − fused test MAE, mean and 95% t-interval over every
replica of the cell). Writes ``token_detection.md``, ``.json`` (the report reads it) and
``.png`` (with the hardware stamp); the markdown opens with ``_measure``'s stamp line.
"""

from __future__ import annotations

import json
from collections import defaultdict
from pathlib import Path
from typing import Any

import numpy as np

ENERGY_KEY = "cohort.ecg_event_gain"
BEFORE = "tokens_nomix"               # the token recipe shipped before its lead mix was chosen
STYLES = {"tokens": ("o-", "token recipe (shipped)"), BEFORE: ("^-.", "before the lead mix"),
          "pooled": ("s--", "pooled recipe")}


def summarise(lines: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The table's rows from the log's replicas."""
    from rightsize.probes.evaluation.paired import paired_difference
    from rightsize.probes.evaluation.planted import FOUND
    from token_detection import energy_ratio

    cells: dict[tuple, list[dict[str, Any]]] = defaultdict(list)
    learners: dict[tuple, list[dict[str, Any]]] = defaultdict(list)  # the cohort's, any recipe
    for r in lines:
        cells[(r.get("recipe", "tokens"), r["tokens"], r["train"], r["leads"],
               r["gain"])].append(r)
        cohort = (r["kind"], r["tokens"], r["train"], r["leads"], r["gain"])
        if r["kind"] != "probes" and not any(   # once per learner (any recipe's run)
                (t["cohort_seed"], t["seed"]) == (r["cohort_seed"], r["seed"])
                for t in learners[cohort]):
            learners[cohort].append(r)
    rows = []
    for (recipe, tokens, train, leads, gain), rs in sorted(
            cells.items(), key=lambda kv: (kv[0][0] != "tokens", *kv[0])):
        probes = [r for r in rs if r["kind"] == "probes"]
        seeds = {r["cohort_seed"] for r in probes}
        told, blind = ([r["weight"] for r in learners[(kind, tokens, train, leads, gain)]
                        if r["cohort_seed"] in seeds]
                       for kind in ("told_learner", "blind_learner"))
        heads = np.array([r["best_head_val"] for r in probes])
        gain_ci = paired_difference([r["concat_mae"] for r in probes],
                                    [r["fused_mae"] for r in probes])
        rows.append({
            "recipe": recipe, "fused": probes[0].get("fused") if probes else None,
            "fused_batch": probes[0].get("fused_batch", 64) if probes else None,  # 64: before
            "ecg_tokens": tokens, "train_subjects": train, "event_leads": leads,
            "energy": gain, "energy_key": ENERGY_KEY, "energy_ratio": energy_ratio(gain),
            "cohort_seeds": sorted({r["cohort_seed"] for r in rs}), "n_seeds": len(probes),
            "found_share": float((heads >= FOUND).mean()),
            "best_head_val_mean": float(heads.mean()),
            "best_head_val_sd": float(heads.std(ddof=1)) if len(heads) > 1 else 0.0,
            "best_heads": [round(float(h), 4) for h in heads],
            "told_learner_weight_mean": float(np.mean(told)) if told else None,
            "told_learner_weights": [round(float(w), 4) for w in told],
            "blind_learner_weight_mean": float(np.mean(blind)) if blind else None,
            "blind_learner_weights": [round(float(w), 4) for w in blind],
            "null_weight": leads / tokens,     # |event| / N: one token per lead
            "fused_mae_mean": float(np.mean([r["fused_mae"] for r in probes])),
            "concat_mae_mean": float(np.mean([r["concat_mae"] for r in probes])),
            "mae_gain": {"mean": gain_ci.mean, "lo": gain_ci.lo, "hi": gain_ci.hi,
                         "n": gain_ci.n},
        })
    return rows


def markdown(rows: list[dict[str, Any]], command: str, hardware: str, found: float) -> str:
    """The table as markdown, with how it was made."""
    out = [
        "# Token detection: is a planted ECG event found? (split energy, HuBERT-ECG layout)",
        "",
        f"Made by `{command}` on {hardware}." if command else f"Hardware: {hardware}.",
        "",
        f"*found*: share of fused replicas whose validation-chosen head puts >= {found} of its "
        "weight on the event's tokens (test split). *energy*: the event's ECG energy (code + "
        "content, summed over its tokens) / one token's noise energy "
        "(`cohort.ecg_event_gain` g: 1.7 g²). Gain: concat − fused test MAE, paired by "
        "replica, 95% t-interval. Told learner: the learnable reference "
        "(docs/tokens.md), beside its null |event|/N; not told: the same learner without the "
        "generator's code subspaces (what it learns from the data alone).",
        "",
        "| fused recipe | tokens | train | leads | g | energy | cohort seeds | replicas | found "
        "| best head (val-chosen) | per replica | told learner | not told | null | fused MAE "
        "| concat MAE | gain [95% CI] |",
        "|---|---:|---:|---:|---:|---:|---|---:|---:|---|---|---|---|---:|---:|---:|---|",
    ]
    for r in rows:
        told, blind = ("—" if r[f"{k}_weight_mean"] is None else
                       f"{r[f'{k}_weight_mean']:.3f} ("
                       + ", ".join(f"{w:.2f}" for w in r[f"{k}_weights"]) + ")"
                       for k in ("told_learner", "blind_learner"))
        g = r["mae_gain"]
        out.append(
            f"| {_recipe(r)} | {r['ecg_tokens']} | {r['train_subjects']} | {r['event_leads']} | "
            f"{r['energy']:g} | {r['energy_ratio']:.2f} | "
            f"{', '.join(map(str, r['cohort_seeds']))} | {r['n_seeds']} | "
            f"{r['found_share']:.2f} | {r['best_head_val_mean']:.3f} ± "
            f"{r['best_head_val_sd']:.3f} | {', '.join(f'{h:.2f}' for h in r['best_heads'])} "
            f"| {told} | {blind} | {r['null_weight']:.3f} | {r['fused_mae_mean']:.2f} | "
            f"{r['concat_mae_mean']:.2f} | {g['mean']:+.2f} [{g['lo']:+.2f}, {g['hi']:+.2f}] |")
    return "\n".join(out) + "\n"


def _recipe(row: dict[str, Any]) -> str:
    """The row's fused recipe in words: its name and the block's differing keys."""
    f = {**(row.get("fused") or {}), "batch": row.get("fused_batch")}
    keys = ("fusion_dim", "heads", "hidden", "epochs", "batch", "dropout", "lead_mix")
    return row.get("recipe", "tokens") + (
        " (" + ", ".join(f"{k} {f[k]}" for k in keys if f.get(k) is not None) + ")"
        if row.get("fused") else "")


def figure(rows: list[dict[str, Any]], hardware: str, path: Path) -> None:
    """Found share and weight on the event against energy at 93 tokens and the smallest train
    size: one colour per number of leads, the shipped token recipe solid, the token recipe
    before it (:data:`BEFORE`) dash-dotted, the pooled cohort's recipe dashed, the told learner
    dotted. Rows of one energy only (train sizes, 186 tokens)
    are in the table."""
    import matplotlib

    matplotlib.use("Agg", force=True)
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(1, 2, figsize=(11, 4.6), dpi=100)
    base = [r for r in rows if r["ecg_tokens"] == 93]
    train = min((r["train_subjects"] for r in base), default=0)
    series: dict[tuple, list[dict[str, Any]]] = defaultdict(list)
    for r in base:
        if r["train_subjects"] == train and r.get("recipe", "tokens") in STYLES:
            series[(r["event_leads"], r.get("recipe", "tokens"))].append(r)
    colours = {1: "tab:blue", 3: "tab:orange", 12: "tab:green"}
    told_done: set[int] = set()
    for (leads, recipe), rs in sorted(series.items()):
        rs = sorted(rs, key=lambda r: r["energy_ratio"])
        x = [r["energy_ratio"] for r in rs]
        style, name = STYLES[recipe]
        label = f"{leads} lead{'s' if leads > 1 else ''}, {name}"
        c = colours.get(leads)
        ax[0].plot(x, [r["found_share"] for r in rs], style, color=c, label=label)
        ax[1].plot(x, [r["best_head_val_mean"] for r in rs], style, color=c, label=label)
        told = [(xx, r["told_learner_weight_mean"]) for xx, r in zip(x, rs, strict=True)
                if r["told_learner_weight_mean"] is not None]
        if told and leads not in told_done:
            told_done.add(leads)
            ax[1].plot(*zip(*told, strict=True), ":", color=c, alpha=0.7,
                       label=f"told learner, {leads} lead{'s' if leads > 1 else ''}")
    for a, title in zip(ax, ("share of replicas that find the event",
                             "weight on the event (val-chosen head, mean)"), strict=True):
        a.set_xscale("log")
        a.set_xlabel("event energy / one token's noise energy")
        a.set_ylim(-0.02, 1.02)
        a.set_title(f"{title}\n93 tokens, {train:,} train subjects", fontsize=10)
        a.grid(alpha=0.3)
    ax[1].legend(fontsize=7, loc="center left", bbox_to_anchor=(1.01, 0.5))
    fig.text(0.01, 0.01, f"synthetic cohort (planted event); measured on {hardware}",
             fontsize=7)
    fig.tight_layout(rect=(0, 0.04, 1, 1))
    fig.savefig(path, format="png", metadata={"Software": None})
    plt.close(fig)


def render(log: Path, out: Path, command: str, hardware: str) -> None:
    """Write token_detection.{md,json,png} under ``out`` from ``log``."""
    from _measure import write_result
    from rightsize.probes.evaluation.planted import FOUND

    lines = [json.loads(x) for x in log.read_text().splitlines() if x.strip()]
    rows = summarise(lines)
    run = sorted({(r.get("recipe", "tokens"), r["tokens"], r["train"], r["leads"], r["gain"],
                   r["cohort_seed"]) for r in lines})
    doc = {"command": command, "hardware": hardware, "found_threshold": FOUND,
           "energy_key": ENERGY_KEY, "design": "split energy, HuBERT-ECG token layout",
           "cells_run": [dict(zip(("recipe", "ecg_tokens", "train_subjects", "event_leads",
                                   "energy", "cohort_seed"), c, strict=True)) for c in run],
           "rows": rows}
    (out / "token_detection.json").write_text(json.dumps(doc, indent=1) + "\n")
    write_result(out / "token_detection.md", markdown(rows, command, hardware, FOUND),
                 "token_detection.py")
    figure(rows, hardware, out / "token_detection.png")
