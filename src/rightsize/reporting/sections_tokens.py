"""Report sections of token-level ECG: how each probe reads the ECG, whether the fused
probe's attention finds the planted event, and what each token count costs."""

from __future__ import annotations

from typing import Any

from rightsize import fmt
from rightsize.fmt import get, num
from rightsize.reporting import figures_tokens
from rightsize.reporting.doc import Block, Heading, Note, Para, table
from rightsize.reporting.load import ReportInputs, Source
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


def planted_attention_blocks(inputs: ReportInputs) -> list[Block]:
    """The fused probe's echo->ECG weight on the planted ECG event, per seed and per head,
    with the per-head figure; nothing for a pooled ECG."""
    fused = inputs.evals.get("fused")
    if fused is None or not fused.ok or (num(fused.data, "ecg_tokens") or 1) <= 1:
        return []
    blocks: list[Block] = [Heading("Echo→ECG attention on the planted ECG event", 3,
                                   "planted-token")]
    node = get(fused.data, "attention.echo_to_ecg")
    if not isinstance(node, dict):
        return blocks + [Note(f"{fused.path} has no attention.echo_to_ecg: train the fused "
                              "probe with --truth and a truth file that holds planted tokens "
                              "(a synthetic cohort at cohort.ecg_tokens > 1).")]
    replicas = sorted((k for k in node if k.startswith("r") and k[1:].isdigit()),
                      key=lambda k: int(k[1:]))
    per_seed = ", ".join(fmt.number(num(node[k], "best_head")) for k in replicas)
    heads = ", ".join(fmt.number(num(node, f"h{j}"))
                      for j in range(len([k for k in node if k[:1] == "h" and k[1:].isdigit()])))
    n = int(num(node, "ecg_tokens") or 0)
    blocks.append(Para(
        f"{n} ECG tokens per subject; uniform attention over the null key and the tokens "
        f"would put {fmt.number(num(node, 'uniform'))} on the planted event's tokens. The "
        f"best head of each seed puts {per_seed} there (mean "
        f"{fmt.number(num(node, 'best_head_mean'))} ± {fmt.number(num(node, 'best_head_sd'))}"
        f", the best head chosen per seed: head indices mean nothing across seeds); seed 0's "
        f"heads: {heads}; weight on the null key {fmt.number(num(node, 'null'))}. Over "
        f"{fmt.integer(num(node, 'n_subjects'))} test subjects with an ECG and their "
        f"{fmt.integer(num(node, 'n_clips'))} present clips."))
    fig = figures_tokens.planted_attention(node)
    return blocks + ([fig] if fig is not None else []) + ceiling_blocks(inputs.ceiling, fused)


def ceiling_blocks(src: Source, fused: Source | None = None) -> list[Block]:
    """The planted event's ceiling per count (``metrics/eval/fused_ceiling.json``): what an
    oracle that knows the generator reads from the echo clips, and, at the fused probe's own
    count, its best head's weight as a fraction of the oracle's and its test MAE."""
    if not src.ok:
        return [Note(f"{src.note()} (dvc repro planted_ceiling).")]
    d = src.data
    node = get(fused.data, "attention.echo_to_ecg") if fused is not None and fused.ok else None
    probe_n = int(num(node, "ecg_tokens") or 0) if isinstance(node, dict) else 0
    rows = []
    for n in get(d, "counts") or []:
        c = get(d, f"tokens_{n}") or {}
        post = num(c, "probe_input.clip.posterior")
        best = num(node, "best_head_mean") if n == probe_n else None
        frac = fmt.number(best / post) if best is not None and post else fmt.DASH
        mae = (f"{fmt.number(num(fused.data, 'test.mae_mean'))} ± "
               f"{fmt.number(num(fused.data, 'test.mae_sd'))}"
               if n == probe_n and fused is not None else fmt.DASH)
        told = get(c, "told_learner")
        learnt = (f"{fmt.number(num(told, 'planted_weight_mean'))} ± "
                  f"{fmt.number(num(told, 'planted_weight_sd'))} "
                  f"({fmt.integer(num(told, 'train_subjects'))} train)"
                  if isinstance(told, dict) else fmt.DASH)
        events = num(c, "ecg_events")
        rows.append([fmt.integer(n), fmt.integer(events) if events is not None else fmt.DASH,
                     fmt.number(num(c, "nearest_code_cosine")),
                     fmt.number(num(c, "uniform")), fmt.number(num(c, "probe_input.clip.top1")),
                     fmt.number(post), fmt.number(num(c, "test_mae.oracle")),
                     fmt.number(num(c, "test_mae.no_token")), learnt,
                     fmt.number(best) if best is not None else fmt.DASH, frac, mae])
    return [table(
        ["ECG tokens", "events", "nearest code cosine", "uniform", "oracle top-1 (per clip)",
         "oracle weight on the event", "oracle test MAE", "test MAE without the event",
         "told learner on the event", "fused best head",
         "fraction of the ceiling", "fused test MAE"], rows,
        f"The ceiling: an oracle that knows the synthetic generator's projections and codes "
        f"picks each test subject's planted event (a run of N/events tokens, one at events = N) "
        f"by likelihood from each echo clip, in the "
        f"probes' PCA-{fmt.integer(num(d, 'pca_rank'))} view; its test MAE is the perfect "
        "model's with the planted event's content read through the oracle's choice, and "
        "without it the perfect model reads the mean token. The oracle says whether the clips "
        "identify the event; whether a model can learn the match from the train subjects "
        "is the told learner's column: a small attention told the codes' subspaces, fitted "
        "to LVEF and kept at its best validation MSE (mean ± sd over seeds; a reference, "
        "not a bound). The fused probe is judged as a fraction of the oracle's weight (at "
        "the count it was trained at).")]


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
