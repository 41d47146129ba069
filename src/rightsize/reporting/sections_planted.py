"""Report section of the planted ECG event: does the fused probe's echo->ECG attention find
it, against which references, does the fused probe beat concat, and the detection table's
verdict (how strong an event has to be before token-level ECG pays)."""

from __future__ import annotations

from typing import Any

from rightsize import fmt
from rightsize.fmt import get, num
from rightsize.reporting import figures_tokens
from rightsize.reporting.doc import Block, Heading, Note, Para, table
from rightsize.reporting.sources import ReportInputs, Source

FOUND = 0.5           # the validation-chosen head's weight on the event: found (planted.FOUND)
FOUND_SHARE = 0.8     # a detection-table cell counts as found in at least this share of seeds
DETECTION_TOKENS = 93  # the sentence's token count: one 5-s HuBERT-ECG crop


def planted_attention_blocks(inputs: ReportInputs) -> list[Block]:
    """The fused probe's echo->ECG weight on the planted ECG event (head chosen on the
    validation split, read on test), the figure, fused against concat paired by seed, the
    references per count and the detection sentence; nothing for a pooled ECG."""
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
    blocks.append(Para(_recipe_words(inputs, fused.data)
                       + _attention_words(node, _probe_design(inputs, node))))
    fig = figures_tokens.planted_attention(node)
    return (blocks + ([fig] if fig is not None else []) + paired_blocks(inputs.compare)
            + reference_blocks(inputs.ceiling, fused) + [Para(detection_sentence(
                inputs.detection))])


def _recipe_words(inputs: ReportInputs, evaluated: Any) -> str:
    """The fused recipe that trained (its checkpoint's architecture in the train metrics, the
    eval file's epochs), in one sentence; empty when the train metrics are not there."""
    src = inputs.train.get("fused")
    arch = get(src.data, "arch") if src is not None and src.ok else None
    if not isinstance(arch, dict) or num(arch, "fusion_dim") is None:
        return ""
    heads = int(num(arch, "heads") or 0)
    epochs, dropout = num(evaluated, "epochs"), num(arch, "dropout")
    mix = num(arch, "lead_mix")
    return (f"The fused probe trains its token-level recipe (`train.fused.tokens`): fusion "
            f"width {fmt.integer(num(arch, 'fusion_dim'))}, {heads} head{'s' * (heads != 1)}, "
            f"MLP hidden {fmt.integer(num(arch, 'hidden'))}"
            + (f" (dropout {dropout:g})" if dropout is not None else "")
            + (f", {fmt.integer(epochs)} epochs" if epochs is not None else "")
            + (f", each ECG token plus {mix:g} x the mean of the 12 leads' tokens at its "
               "moment" if mix else "") + ". ")


def _replicas(node: dict[str, Any]) -> list[str]:
    return sorted((k for k in node if k.startswith("r") and k[1:].isdigit()),
                  key=lambda k: int(k[1:]))


def _probe_design(inputs: ReportInputs, node: dict[str, Any]) -> str:
    """The planted event's design at the probe's count, in words (the ceiling file's node at
    that count, else the cohort metrics); empty when neither records it."""
    n = int(num(node, "ecg_tokens") or 0)
    for src, key in ((inputs.ceiling, f"tokens_{n}"), (inputs.cohort, "")):
        c = (get(src.data, key) if key else src.data) if src.ok else None
        words = _design(c) if isinstance(c, dict) else fmt.DASH
        if words != fmt.DASH:
            return f"The planted event is {words}. "
    return ""


def _attention_words(node: dict[str, Any], design: str = "") -> str:
    """The paragraph: each seed's validation-chosen head, found share, uniform, null."""
    replicas = _replicas(node)
    per_seed = ", ".join(fmt.number(num(node[k], "best_head_val")) for k in replicas)
    heads = ", ".join(fmt.number(num(node, f"h{j}"))
                      for j in range(len([k for k in node if k[:1] == "h" and k[1:].isdigit()])))
    found = sum(1 for k in replicas if (num(node[k], "best_head_val") or 0) >= FOUND)
    return (
        f"{fmt.integer(num(node, 'ecg_tokens'))} ECG tokens per subject. {design}In each "
        f"seed the head "
        f"with the most weight on the planted event in the validation split "
        f"({fmt.integer(num(node, 'n_val_subjects'))} subjects) is chosen, then read once on "
        f"the test split: it puts {per_seed} of its weight on the event's tokens (mean "
        f"{fmt.number(num(node, 'best_head_val_mean'))} ± "
        f"{fmt.number(num(node, 'best_head_val_sd'))}; a head index means nothing across "
        f"seeds); found (at least {fmt.number(FOUND)}) in {found} of {len(replicas)} seeds. "
        f"Uniform "
        f"attention over the null key and the tokens would put "
        f"{fmt.number(num(node, 'uniform'))} there. Seed 0's heads on the test split: {heads}; "
        f"its weight on the null key {fmt.number(num(node, 'null'))}. Over "
        f"{fmt.integer(num(node, 'n_subjects'))} test subjects with an ECG and their "
        f"{fmt.integer(num(node, 'n_clips'))} present clips.")


def paired_blocks(src: Source) -> list[Block]:
    """Fused against concat, paired by seed (``metrics/fused_vs_concat.json``)."""
    if not src.ok:
        return [Note(f"{src.note()} (dvc repro compare).")]
    d = src.data
    gain, lo, hi = (num(d, f"mae_gain_{k}") for k in ("mean", "lo", "hi"))
    if gain is None or lo is None or hi is None:
        return [Note(f"{src.path}: {get(d, 'note') or 'no paired gain'}.")]
    if lo > 0:
        verdict = "the fused probe errs less than concat (the interval is above 0)"
    elif hi < 0:
        verdict = "the fused probe errs more than concat (the interval is below 0)"
    else:
        verdict = "the interval includes 0: no difference these seeds can show"
    return [Para(
        f"Fused against concat, seed by seed (same seeds, same test subjects): concat's test "
        f"MAE minus the fused probe's is {_signed(gain)} LVEF points, 95% interval "
        f"{_signed(lo)} to {_signed(hi)} (Student t over {fmt.integer(num(d, 'n_pairs'))} "
        f"seeds; training seeds only, the cohort held fixed): {verdict}.")]


def _signed(x: float) -> str:
    return ("+" if x > 0 else "") + fmt.number(x)


def reference_blocks(src: Source, fused: Source) -> list[Block]:
    """Per token count (``metrics/eval/fused_ceiling.json``): whether the echo clips identify
    the event (an oracle's check), what a learner given the generator's subspaces learns from
    the training split beside the null, and the fused probe at its own count."""
    if not src.ok:
        return [Note(f"{src.note()} (dvc repro planted_ceiling).")]
    d = src.data
    node = get(fused.data, "attention.echo_to_ecg")
    probe_n = int(num(node, "ecg_tokens") or 0) if isinstance(node, dict) else 0
    rows = []
    for n in get(d, "counts") or []:
        c = get(d, f"tokens_{n}") or {}
        told = get(c, "told_learner")
        told = told if isinstance(told, dict) else {}
        null = num(told, "null_weight")
        null = null if null is not None else num(told, "uniform")
        at_probe = n == probe_n
        blind = get(c, "blind_learner")
        rows.append([
            fmt.integer(n), fmt.integer(num(c, "ecg_events")), _design(c),
            fmt.number(num(c, "probe_input.clip.top1")), fmt.number(num(c, "test_mae.oracle")),
            fmt.number(num(c, "test_mae.no_token")),
            _pm(told, "planted_weight") + (f" ({fmt.integer(num(told, 'train_subjects'))} train)"
                                           if told else ""),
            _pm(blind, "planted_weight") if isinstance(blind, dict) else fmt.DASH,
            fmt.number(null),
            _pm(node, "best_head_val") if at_probe else fmt.DASH,
            _pm(fused.data, "test.mae") if at_probe else fmt.DASH])
    return [table(
        ["ECG tokens", "events", "event design", "echo clips identify the event (oracle top-1)",
         "test MAE, event read perfectly", "test MAE without the event",
         "reference learner's weight on the event", "the same learner, not given them",
         "null (a uniform head)",
         "fused: validation-chosen head on test", "fused test MAE"], rows,
        f"Whether the echo clips identify the planted event: an oracle that knows the "
        f"synthetic generator picks each test clip's event by likelihood in the probes' "
        f"PCA-{fmt.integer(num(d, 'pca_rank'))} view (a check of the data, not a target: it "
        "is 1 whenever the clips identify the event). What a model can learn from the training "
        "split: a reference learner given the generator's subspaces, fitted to LVEF and kept "
        "at its best validation loss, scored on the test split (mean ± sd over its seeds), and "
        "the same learner not given the subspaces (at the probe's count: what that model finds "
        "from the data alone); beside them the null, what a head spreading its weight evenly "
        "over the N tokens puts on the event's tokens. The fused probe (mean ± sd over its "
        "seeds) at the count it was trained at.")]


def _pm(data: Any, key: str) -> str:
    """``mean ± sd`` of ``<key>_mean``/``<key>_sd``; dash when absent."""
    mean = num(data, f"{key}_mean")
    if mean is None:
        return fmt.DASH
    return f"{fmt.number(mean)} ± {fmt.number(num(data, f'{key}_sd'))}"


def _design(c: dict[str, Any]) -> str:
    """The event's design in words, from the ceiling node's keys; dash when unrecorded."""
    parts = []
    if get(c, "layout") == "hubert":
        parts.append("laid out as HuBERT-ECG's tokens (lead after lead, 0.64 s each)")
    leads = num(c, "ecg_event_leads")
    if leads is not None:
        parts.append(f"seen in {fmt.integer(leads)} lead{'s' if leads != 1 else ''}")
    energy = get(c, "ecg_event_energy")
    if energy == "split":
        parts.append("energy split over its tokens")
    elif energy == "copy":
        parts.append("copied into every token")
    return ", ".join(parts) or fmt.DASH


def detection_sentence(src: Source) -> str:
    """One sentence from the detection table (``benchmarks/results/token_detection.json``):
    per number of leads the event is seen in, the smallest energy from which the shipped
    fused recipe (``train.fused.tokens`` at N > 1 tokens) finds it; a second for the pooled
    cohort's recipe (``train.fused`` alone) where it ran."""
    if not src.ok:
        return (f"How strong an event must be to be found: the detection table ({src.path}) "
                "has not been run (python benchmarks/token_detection.py).")
    every = [r for r in get(src.data, "rows") or [] if isinstance(r, dict)
             and num(r, "ecg_tokens") == DETECTION_TOKENS]
    rows = [r for r in every if r.get("recipe", "tokens") == "tokens"]
    if not rows:
        return (f"How strong an event must be to be found: {src.path} has no row at "
                f"{DETECTION_TOKENS} tokens.")
    train = min(num(r, "train_subjects") or 0 for r in rows)
    key = next((str(r["energy_key"]) for r in rows if r.get("energy_key")), "")
    hardware = get(src.data, "hardware")
    hardware = get(hardware, "cpu") if isinstance(hardware, dict) else hardware
    where = f", measured on {hardware}" if hardware else ""
    out = (f"At {DETECTION_TOKENS} tokens, with {fmt.integer(train)} train subjects, "
           f"{_found_from(rows, train, key)}; below that, {_below(rows, train)}. Found "
           f"means the head validation chose puts ≥ {fmt.number(FOUND)} on the event in at "
           f"least {FOUND_SHARE:.0%} of seeds ({src.path}{where}).")
    pooled = [r for r in every if r.get("recipe") == "pooled"
              and num(r, "train_subjects") == train]
    if pooled:
        f = pooled[0].get("fused") or {}
        recipe = ", ".join(f"{k} {f[k]}" for k in ("fusion_dim", "heads", "hidden", "epochs")
                           if k in f)
        out += (f" With the pooled cohort's fused recipe instead"
                f"{f' ({recipe})' if recipe else ''}, {_found_from(pooled, train, '')}.")
    return out


def _below(rows: list[dict], train: float) -> str:
    """What the cells not found at ``train`` say about the gain over concat (the paired
    concat − fused test MAE and its 95% interval, per cell)."""
    gains = [g for r in rows if num(r, "train_subjects") == train
             and (num(r, "found_share") or 0.0) < FOUND_SHARE
             for g in [get(r, "mae_gain")] if isinstance(g, dict)
             and None not in (num(g, "mean"), num(g, "lo"))]
    if not gains:
        return "the head does not pick the event out"
    above = sum(num(g, "lo") > 0 for g in gains)          # type: ignore[operator]
    means = [num(g, "mean") or 0.0 for g in gains]
    span = f"{min(means):+.2f} to {max(means):+.2f}" if len(means) > 1 else f"{means[0]:+.2f}"
    if above == 0:
        return (f"expect no gain over pooled (concat − fused test MAE {span}, every 95% "
                "interval includes 0)")
    if above == len(gains):
        return ("the head does not pick the event out, yet the fused probe still errs less "
                f"than concat (concat − fused test MAE {span}, every 95% interval above 0)")
    return (f"the head does not pick the event out; concat − fused test MAE {span}, "
            f"{above} of {len(gains)} 95% intervals above 0")


def _found_from(rows: list[dict], train: float, key: str) -> str:
    """Per number of leads, the smallest energy from which the event is found at ``train``;
    lead counts with the same answer share one clause ("seen in 12, 3 or 1 leads")."""
    rows = [r for r in rows if num(r, "train_subjects") == train]
    answers: dict[tuple, list[int]] = {}
    for leads in sorted({int(num(r, "event_leads") or 0) for r in rows}, reverse=True):
        cells = sorted((num(r, "energy") or 0.0, num(r, "found_share") or 0.0,
                        num(r, "energy_ratio")) for r in rows
                       if num(r, "event_leads") == leads)
        found = [(e, ratio) for i, (e, _, ratio) in enumerate(cells)
                 if all(share >= FOUND_SHARE for _, share, _ in cells[i:])]
        answer = ("found", *found[0]) if found else ("none", cells[-1][0], cells[-1][2])
        answers.setdefault(answer, []).append(leads)
    parts: list[str] = []
    for (kind, e, ratio), leads in answers.items():
        seen = f"seen in {_counts(leads)} lead{'s' if leads != [1] else ''}"
        first = not parts
        head = f"an event {seen} is found" if first else f"one {seen}"
        if kind == "none":
            parts.append(f"{head} at none of the energies tried (up to "
                         f"{fmt.number(ratio or e)}{'x' if ratio is not None else ''})")
        elif ratio is not None:                         # the energy over one token's noise
            tail = f" one token's noise ({key} {fmt.number(e)})" if first and key else ""
            parts.append(f"{head} when {'its energy is ' if first else ''}≥ "
                         f"{fmt.number(ratio)}x{tail}")
        else:
            energy = f"its energy ({key}) is" if first and key else "its energy is" if first \
                else ""
            parts.append(f"{head} when {energy} ≥ {fmt.number(e)}".replace("  ", " "))
    return ", ".join(parts)


def _counts(leads: list[int]) -> str:
    """12 / 12 or 3 / 12, 3 or 1."""
    words = [str(n) for n in leads]
    return words[0] if len(words) == 1 else f"{', '.join(words[:-1])} or {words[-1]}"
