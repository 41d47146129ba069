"""Report sections of token-level ECG: how each probe reads the ECG and what each token
count costs (whether the fused probe's attention finds the planted event:
:mod:`rightsize.reporting.sections_planted`, re-exported here)."""

from __future__ import annotations

from typing import Any

from rightsize import fmt
from rightsize.fmt import get, num
from rightsize.reporting import figures_tokens
from rightsize.reporting.doc import Block, Heading, Note, Para, table
from rightsize.reporting.sections_planted import planted_attention_blocks
from rightsize.reporting.sources import ReportInputs, Source

__all__ = ["ecg_input_blocks", "planted_attention_blocks", "token_cost_blocks"]
from rightsize.reporting.provenance import caveat, measured_where

POOLING_WORDS = {  # the registry's ecg_pooling values, in words
    "mean": "the mean of the ECG tokens", "none": "no ECG",
    "attention (echo->ECG); mean (ECG->echo query)":
        "every ECG token as an echo→ECG attention key, and their mean as the ECG→echo query"}


def ecg_input_blocks(inputs: ReportInputs) -> list[Block]:
    """One paragraph: ECG tokens per subject, and each probe's ``ecg_pooling`` (its
    checkpoint's arch, copied into its eval file) in words."""
    evals = {p: s.data for p, s in inputs.evals.items() if s.ok and get(s.data, "ecg_pooling")}
    if not evals:
        return []
    tokens = sorted({int(num(d, "ecg_tokens") or 1) for d in evals.values()})
    by_pooling: dict[str, list[str]] = {}
    for p, d in evals.items():
        by_pooling.setdefault(str(get(d, "ecg_pooling")), []).append(p)
    parts = []
    for pooling, probes in by_pooling.items():
        words = POOLING_WORDS.get(pooling, pooling)
        verb = "reads" if len(probes) == 1 else "read"
        parts.append(f"{' and '.join(probes)} {verb} {words} (ecg_pooling: {pooling})")
    n = ", ".join(str(t) for t in tokens)
    pooled = " (one pooled vector)" if tokens == [1] else ""
    return [Para(f"ECG input: {n} token(s) per subject{pooled}. How each probe reads it, as "
                 f"its checkpoint's arch records: {'; '.join(parts)}.")]


def token_cost_blocks(src: Source) -> list[Block]:
    """The fused probe's cost per ECG token count (``metrics/token_cost.json``)."""
    blocks: list[Block] = [Heading("Cost at token-level ECG", 3, "token-cost")]
    if not src.ok:
        return blocks + [Note(f"{src.note()} (dvc repro token_cost).")]
    d = src.data
    cases: list[dict[str, Any]] = sorted(
        (c for c in (get(d, "cases") or {}).values() if isinstance(c, dict)),
        key=lambda c: num(c, "ecg_tokens") or 0)
    rows = [[fmt.integer(num(c, "ecg_tokens")), fmt.nbytes(num(c, "manifest_bytes")),
             fmt.nbytes(num(c, "payload_bytes")), fmt.seconds(num(c, "build_s")),
             fmt.seconds(num(c, "train_eval_s"))
             + ("" if c.get("measured_whole") else " (extrapolated)"),
             fmt.megabytes(num(c, "peak_rss_mb")), str(c.get("accelerator", fmt.DASH))]
            for c in cases]
    bases = sorted({str(c.get("basis", "")) for c in cases})
    blocks.append(table(
        ["ECG tokens", "manifest on disk", "float32 payload", "build", "fused train + evaluate",
         "peak RSS", "accelerator"], rows,
        f"The fused probe, one seed, each count a whole `rightsize cohort` "
        f"and `rightsize train fused` process on a synthetic cohort of the configured "
        f"geometry; {'; '.join(bases)}; measured on {measured_where(d)}."))
    elsewhere = caveat(d, "These token-cost timings")
    if elsewhere:
        blocks.append(Note(elsewhere))
    fig = figures_tokens.token_cost(cases)
    return blocks + ([fig] if fig is not None else [])
