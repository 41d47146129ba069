"""Report sections for the probes: quality with 95 % CIs, curves, missing modality,
wall-clock, footprint, the re-extraction sizing answer and the hardware stamp."""

from __future__ import annotations

import re
from typing import Any

from rightsize import fmt
from rightsize.experiments import flatten
from rightsize.fmt import get, num
from rightsize.reporting import figures
from rightsize.reporting.doc import Block, Heading, Note, Para, labelled, table
from rightsize.reporting.provenance import measured_where
from rightsize.reporting.sections_extract import extract_blocks
from rightsize.reporting.sections_patience import patience_blocks
from rightsize.reporting.sections_sizing import sizing_blocks
from rightsize.reporting.sections_tokens import (
    ecg_input_blocks,
    planted_attention_blocks,
    token_cost_blocks,
)
from rightsize.reporting.sources import ReportInputs, Source
from rightsize.reporting.target_words import mae_axis, target, targets_text
from rightsize.reporting.verdicts import probe_total_seconds

MODALITY_ROWS = (("both_present", "both modalities"), ("echo_absent", "echo absent"),
                 ("ecg_absent", "ECG absent"))
HARDWARE_KEYS = ("cpu", "cores", "threads", "torch", "device")


SYNTHETIC_COHORT = ("Synthetic cohort: rightsize generated these subjects, embeddings and LVEF "
                    "labels with a planted signal (cohort.source: synthetic; docs/cohort.md), "
                    "so the numbers below show what the pipeline measures and recovers, not "
                    "how well the probes would do on patients. Set cohort.source: files for "
                    "your own cohort.")


def probe_sections(inputs: ReportInputs, synthetic: bool = False) -> list[Block]:
    """Every probe section in order; ``synthetic`` (the generated cohort) labels the heading
    and every figure and table caption."""
    head = "Probes (synthetic cohort, planted signal)" if synthetic else "Probes"
    blocks: list[Block] = [Heading(head, 2, "probes", "Probes")]
    if synthetic:
        blocks.append(Note(SYNTHETIC_COHORT))
    blocks.append(Para(targets_text(target(inputs.cohort))))
    with figures.stamped("synthetic cohort" if synthetic else ""):
        body = _probe_body(inputs)
    blocks += labelled(body, "Synthetic cohort") if synthetic else body
    return blocks + hardware_blocks(inputs)


def _probe_body(inputs: ReportInputs) -> list[Block]:
    """The probe sections between the heading and the hardware stamp."""
    body: list[Block] = []
    body += cohort_blocks(inputs.cohort)
    body += ecg_input_blocks(inputs)
    body += metrics_blocks(inputs)
    body += planted_attention_blocks(inputs)
    body += curve_blocks(inputs)
    body += patience_blocks(inputs)
    body += missing_modality_blocks(inputs)
    body += wall_clock_blocks(inputs)
    body += footprint_blocks(inputs.footprint, inputs.cohort)
    body += token_cost_blocks(inputs.token_cost)
    body += probe_telemetry_blocks(inputs)
    return body


def sizing_section(inputs: ReportInputs) -> list[Block]:
    """The re-extraction sizing answer under its own top-level heading."""
    return [Heading("Sizing", 2, "sizing"),
            *sizing_blocks(inputs.sizing)]


def extraction_section(inputs: ReportInputs) -> list[Block]:
    """The extraction run checked against the ask, under its own top-level heading."""
    return [Heading("Extraction", 2, "extraction"), *extract_blocks(inputs.extract)]


def cohort_blocks(cohort: Source) -> list[Block]:
    """One line on the cohort the probes were trained on."""
    if not cohort.ok:
        return [Note(f"Cohort: {cohort.note()}.".replace(": Not", ": not", 1))]
    d = cohort.data
    return [Para(f"Cohort: {fmt.integer(num(d, 'n_subjects'))} subjects, up to "
                 f"{fmt.integer(num(d, 'max_clips'))} clips per study; a perfect model's MAE "
                 f"(label noise floor) is {fmt.number(num(d, 'perfect_model_mae'))}; building "
                 f"it peaked at {fmt.megabytes(num(d, 'peak_rss_mb'))} RSS.")]


def metrics_blocks(inputs: ReportInputs) -> list[Block]:
    """Test metrics with 95 % bootstrap CIs, one row per probe, plus the interval figure."""
    blocks: list[Block] = [Heading("Test metrics (95 % CI)", 3, "probe-metrics")]
    rows, mae, auc = [], [], []
    for p in inputs.probes:
        src = inputs.evals[p]
        if not src.ok:
            rows.append([p, src.note()] + [fmt.DASH] * 7)
            continue
        d = src.data
        t = "test."
        rows.append([p, _mean_sd(d, t + "mae"), _mean_sd(d, t + "auroc"),
                     fmt.ci(num(d, t + "mae"), num(d, t + "mae_lo"), num(d, t + "mae_hi")),
                     fmt.ci(num(d, t + "auroc"), num(d, t + "auroc_lo"), num(d, t + "auroc_hi")),
                     fmt.number(num(d, "val.mae")), fmt.number(num(d, "best_epoch")),
                     fmt.number(num(d, "mean_predictor_mae")), fmt.integer(num(d, "params"))])
        mae.append((p, num(d, t + "mae"), num(d, t + "mae_lo"), num(d, t + "mae_hi")))
        auc.append((p, num(d, t + "auroc"), num(d, t + "auroc_lo"), num(d, t + "auroc_hi")))
    blocks.append(table(["probe", "test MAE, mean ± sd (seeds)", "test AUROC, mean ± sd",
                         "seed 0: test MAE [95 % CI]", "seed 0: test AUROC [95 % CI]",
                         "val MAE", "best epoch", "mean-predictor MAE", "trainable params"],
                        rows,
                        "Mean ± sample sd across the seed replicas (train.seeds; n in "
                        "brackets); bootstrap 95 % intervals of the seed-0 model on the test "
                        "split; val MAE and best epoch of seed 0. The mean predictor is the "
                        "baseline every probe must beat. Trainable params: what the optimizer "
                        "fits (the footprint counts every stored number, buffers included)."))
    fig = figures.intervals("probe_metrics", "Probe test metrics with 95 % CIs",
                            [(mae_axis(target(inputs.cohort)), mae),
                             ("test AUROC (unitless)", auc)],
                            "Dots: point estimates; bars: bootstrap 95 % intervals.")
    if fig:
        blocks.append(fig)
    fused = inputs.evals.get("fused")
    entropy = get(fused.data, "attention_entropy") if fused is not None and fused.ok else None
    if entropy is not None:
        blocks.append(Para(f"Fused probe attention entropy: {_flat(entropy)}."))
    return blocks


def _mean_sd(d: Any, key: str) -> str:
    """``6.21 ± 0.32 (5)`` from ``<key>_mean``/``_sd`` and ``n_seeds``, else a dash."""
    mean, sd = num(d, key + "_mean"), num(d, key + "_sd")
    if mean is None:
        return fmt.DASH
    n = num(d, "n_seeds")
    return (f"{fmt.number(mean)} ± {fmt.number(sd)}"
            + (f" ({fmt.integer(n)})" if n is not None else ""))


def _flat(x: Any) -> str:
    if isinstance(x, dict):
        return ", ".join(f"{k} {_flat(v)}" for k, v in x.items())
    if isinstance(x, list):
        return "[" + ", ".join(_flat(v) for v in x[:12]) + (", ..." if len(x) > 12 else "") + "]"
    return fmt.number(x, 4)


def curve_blocks(inputs: ReportInputs) -> list[Block]:
    """Train/val loss per epoch, one figure per probe."""
    blocks: list[Block] = [Heading("Training curves", 3, "probe-curves")]
    for p in inputs.probes:
        src = inputs.curves[p]
        best = get(inputs.evals[p].data, "best_epoch") if inputs.evals[p].ok else None
        fig = figures.probe_curve(p, src.data, best) if src.ok else None
        if fig is not None:
            blocks.append(fig)
        elif src.ok and len(src.data.get("epoch", ())) == 1:
            losses = ", ".join(f"{c.replace('_', ' ')} {fmt.number(float(src.data[c][0]), 4)}"
                               for c in ("train_loss", "val_loss") if c in src.data)
            blocks.append(Para(f"probe {p}: a single fit (one epoch, nothing to plot): "
                               f"{losses or 'no loss recorded'}."))
        elif src.ok:
            blocks.append(Note(f"probe {p}: {src.path} has no epochs with a loss."))
        else:
            blocks.append(Note(f"probe {p}: {src.note()}."))
    return blocks


def missing_modality_blocks(inputs: ReportInputs) -> list[Block]:
    """The fused probe with one modality removed at test time, then every probe's MAE."""
    blocks: list[Block] = [Heading("Missing modality", 3, "missing-modality")]
    src = inputs.missing.get("fused")
    if src is None or not src.ok:
        note = src.note() if src is not None else "Not run: fused is not in train.probes"
        blocks.append(Note(f"{note} (dvc repro train@fused)."))
    elif get(src.data, "n_rows") == 0:
        blocks.append(Note(f"{src.path}: {get(src.data, 'note') or 'no paired test rows'}."))
    else:
        blocks += _fused_missing(src, mae_axis(target(inputs.cohort)))
    return blocks + _missing_by_probe(inputs)


def _fused_missing(src: Source, mae_label: str) -> list[Block]:
    rows, mae, auc = [], [], []
    for key, label in MODALITY_ROWS:
        d = get(src.data, key)
        if not isinstance(d, dict):
            rows.append([label, "not in file", fmt.DASH, fmt.DASH])
            continue
        rows.append([label, fmt.ci(num(d, "mae"), num(d, "mae_lo"), num(d, "mae_hi")),
                     fmt.ci(num(d, "auroc"), num(d, "auroc_lo"), num(d, "auroc_hi")),
                     fmt.integer(num(d, "n_bootstrap"))])
        mae.append((label, num(d, "mae"), num(d, "mae_lo"), num(d, "mae_hi")))
        auc.append((label, num(d, "auroc"), num(d, "auroc_lo"), num(d, "auroc_hi")))
    blocks: list[Block] = [table(["condition", "test MAE [95 % CI]", "test AUROC [95 % CI]",
                                  "bootstrap resamples"], rows)]
    fig = figures.intervals("missing_modality", "Fused probe with a modality missing",
                            [(mae_label, mae), ("test AUROC (unitless)", auc)],
                            "The fused probe evaluated with both, or only one, modality.")
    if fig:
        blocks.append(fig)
    return blocks


def _missing_by_probe(inputs: ReportInputs) -> list[Block]:
    """Test MAE [95 % CI] of every probe under each condition (same rows, paired resamples)."""
    rows = []
    for p in inputs.probes:
        src = inputs.missing.get(p)
        if src is None or not src.ok:
            continue
        cells = []
        for key, _ in MODALITY_ROWS:
            d = get(src.data, key)
            cells.append(fmt.ci(num(d, "mae"), num(d, "mae_lo"), num(d, "mae_hi"))
                         if isinstance(d, dict) else fmt.DASH)
        both, no_ecg = num(src.data, "both_present.mae"), num(src.data, "ecg_absent.mae")
        cost = (f"{'+' if no_ecg >= both else ''}{fmt.number(no_ecg - both)}"
                if both is not None and no_ecg is not None else fmt.DASH)
        rows.append([p, *cells, cost])
    if not rows:
        return []
    return [Para("Every probe on the same test rows (both modalities present in the data), "
                 "test MAE [95 % CI]: a one-modality probe without its modality predicts "
                 "from the mean-imputed input, and is unchanged without the other one. The "
                 "last column is what taking the ECG away costs each probe (seed 0)."),
            table(["probe", *(label for _, label in MODALITY_ROWS),
                   "ECG absent − both (MAE)"], rows)]


def wall_clock_blocks(inputs: ReportInputs) -> list[Block]:
    """Seconds per phase and peak RSS per probe."""
    blocks: list[Block] = [Heading("Wall-clock per phase", 3, "wall-clock")]
    rows, bars, total = [], [], None
    for p in inputs.probes:
        src = inputs.evals[p]
        if not src.ok:
            rows.append([p, src.note(), fmt.DASH, fmt.DASH, fmt.DASH, fmt.DASH])
            continue
        d = src.data
        t = probe_total_seconds(d)
        if t is not None:
            total = (total or 0.0) + t
        rss = [num(d, "peak_rss_mb_train"), num(d, "peak_rss_mb")]
        rows.append([p, fmt.seconds(num(d, "wall_clock_s.train")),
                     fmt.seconds(num(d, "wall_clock_s.eval")), fmt.seconds(t),
                     " / ".join(fmt.megabytes(v) for v in rss if v is not None) or fmt.DASH,
                     products_rate(inputs.train.get(p))])
        bars.append((p, num(d, "wall_clock_s.train"), num(d, "wall_clock_s.eval")))
    rows.append(["all probes", "", "", fmt.seconds(total), "", ""])
    blocks.append(table(["probe", "train", "evaluate", "total", "peak RSS",
                         "training loop, matrix products"], rows,
                        "Peak RSS: after training / the whole train + evaluate process "
                        "(one process per probe). Training loop: the matrix-product FLOPs it "
                        "executed (counted by torch's FLOP counter) over its seconds, and "
                        "their share of a 1024-square fp32 product timed in the same process "
                        "(the machine's GEMM rate at the training threads); a probe trained "
                        "without torch is not counted."))
    fig = figures.wall_clock(bars)
    if fig:
        blocks.append(fig)
    return blocks


def products_rate(src: Source | None) -> str:
    """The training loop's GFLOP/s and its share of the same process's GEMM rate (the
    train record's ``throughput``), or why there is none."""
    if src is None or not src.ok:
        return fmt.DASH
    t = get(src.data, "throughput")
    if not isinstance(t, dict) or not t.get("counted"):
        return "not counted (no torch)" if isinstance(t, dict) else fmt.DASH
    rate, gemm, share = num(t, "gflops"), num(t, "gemm.gflops"), num(t, "share_of_gemm")
    if rate is None or gemm is None or share is None:
        return fmt.DASH
    return f"{rate:.0f} GFLOP/s, {share:.0%} of {gemm:.0f}"


def footprint_blocks(src: Source, cohort: Source) -> list[Block]:
    """Checkpoint bytes and params, payload vs max_clips, peak RSS per stage, disk."""
    blocks: list[Block] = [Heading("Footprint", 3, "footprint")]
    if not src.ok:
        return blocks + [Note(f"{src.note()} (dvc repro footprint).")]
    d = src.data
    ckpt = get(d, "checkpoints") or {}
    rows = [[p, fmt.nbytes(num(c, "bytes")), fmt.integer(num(c, "params"))]
            for p, c in ckpt.items() if isinstance(c, dict)]
    blocks.append(table(["probe", "checkpoint", "stored numbers"], rows,
                        "Checkpoints on disk; stored numbers: every value in the weights file "
                        "(trainable params plus buffers: the inputs' normalisation and PCA "
                        "projection)."))
    configured = num(cohort.data, "max_clips") if cohort.ok else num(d, "max_clips")
    payload = [r for r in (get(d, "payload_table") or []) if isinstance(r, dict)]
    prow = [[fmt.integer(num(r, "max_clips")) + (" (configured)" if configured is not None
                                                  and num(r, "max_clips") == configured else ""),
             fmt.nbytes(num(r, "payload_bytes"))] for r in payload]
    tokens = num(d, "ecg_tokens") or 1
    blocks.append(table(["max clips per study", "float32 payload"], prow,
                        f"With {fmt.integer(tokens)} ECG vector(s) per subject; manifest on "
                        f"disk: {fmt.nbytes(num(d, 'manifest_bytes'))}."))
    fig = figures.payload(payload, configured, num(d, "manifest_bytes"))
    if fig:
        blocks.append(fig)
    rss = get(d, "peak_rss_mb") or {}
    blocks.append(table(["stage", "peak RSS"],
                        [[k, fmt.megabytes(num(rss, k))] for k in rss], "Peak resident memory."))
    writable = get(d, "writable") or {}
    places = ", ".join(f"{k} {'yes' if v else 'NO'}" for k, v in writable.items())
    at = d.get("free_disk_path") if isinstance(d, dict) else None
    blocks.append(Para(f"Free disk: {fmt.nbytes(num(d, 'free_disk_bytes'))}"
                       f"{f' at {at}/ when the footprint stage ran' if at else ''} on "
                       f"{measured_where(d)}; writable: {places or fmt.DASH}. (The ask's free "
                       f"space is measured at sizing.disk.path when the sizing stage runs.)"))
    return blocks


def probe_telemetry_blocks(inputs: ReportInputs) -> list[Block]:
    """The probes' own training logs read by the telemetry engine."""
    present = {p: s for p, s in inputs.probe_telemetry.items() if s.ok}
    blocks: list[Block] = [Heading("Probe training logs (telemetry)", 3, "probe-telemetry")]
    if not present:
        return blocks + [Note("Not run: no metrics/telemetry/probe_<probe>.json "
                              "(dvc repro probe_telemetry).")]
    rows = []
    for p, s in present.items():
        d = s.data
        active = num(d, "active_hours")
        rows.append([p, fmt.duration(num(d, "step_time_s.median")),
                     fmt.integer(num(d, "steps_per_epoch")), fmt.number(num(d, "epochs_run")),
                     fmt.duration(active * 3600 if active is not None else None),
                     fmt.number(num(d, "best_epoch")),
                     fmt.integer(num(d, "launches"))])
    absent = [p for p in inputs.probes if p not in present]
    caption = f"No training log for: {', '.join(absent)}." if absent else ""
    blocks.append(table(["probe", "median step", "steps/epoch", "epochs run", "active",
                         "best epoch", "launches"], rows, caption))
    return blocks


def _comparable(key: str, value: str) -> Any:
    """What of a stamp value decides numerics, for comparing probes; None when it does not
    apply to that probe (the ECG probe never loads torch: "torch not loaded"). For
    ``numerics.blas`` that is the set of kernels picked (the ECG probe loads scipy's OpenBLAS
    beside numpy's; the thread count printed is the library default, not the one used)."""
    if value.endswith("not loaded"):
        return None
    if key == "numerics.blas":
        return frozenset(re.findall(r"(\S+), \d+ threads", value)) or value
    return value


def hardware_blocks(inputs: ReportInputs) -> list[Block]:
    """The hardware, library versions and numerics the probe numbers were measured on,
    with a warning when the probes' eval files carry different stamps."""
    blocks: list[Block] = [Heading("Hardware stamp", 3, "hardware")]
    stamps = {p: get(s.data, "hardware") for p, s in inputs.evals.items() if s.ok}
    stamps = {p: flatten(h) for p, h in stamps.items() if isinstance(h, dict)}   # a.b.c keys
    if not stamps:
        return blocks + [Note("No hardware stamp: no metrics/eval/<probe>.json with hardware.")]
    seen = {k for h in stamps.values() for k in h}
    keys = list(HARDWARE_KEYS) + sorted(seen - set(HARDWARE_KEYS))
    rows, differ, isa, env = [], [], [], []
    for k in keys:
        values = {p: str(h.get(k, fmt.DASH)) for p, h in stamps.items()}
        distinct = set(values.values())
        if len({c for v in distinct if (c := _comparable(k, v)) is not None}) > 1:
            differ.append(k)
        elif distinct <= {"unset", "False", fmt.DASH}:
            continue                                   # not set anywhere: nothing to show
        elif k.startswith("numerics.isa.") and distinct == {"True"}:
            isa.append(k.rsplit(".", 1)[1])
            continue
        elif k.startswith("numerics.env.") and len(distinct) == 1:
            env.append(f"{k.rsplit('.', 1)[1]}={distinct.pop()}")
            continue
        loaded = {p: v for p, v in values.items() if not v.endswith("not loaded")}
        if len(distinct) == 1:
            cell = distinct.pop()
        elif k not in differ and len(set(loaded.values())) == 1 and len(loaded) < len(values):
            idle = [p for p in values if p not in loaded]
            cell = (f"{next(iter(loaded.values()))} ({', '.join(loaded)}; "
                    f"{', '.join(idle)}: {values[idle[0]]})")
        else:
            cell = "; ".join(f"{p}: {v}" for p, v in values.items())
        rows.append([k, cell])
    if isa:
        rows.append(["instruction sets", ", ".join(isa)])
    rows.append(["environment set", ", ".join(env) or "none of the numerics variables"])
    if differ:
        blocks.append(Note(f"These metrics were produced under different stamps ("
                           f"{', '.join(differ)} differ between probes): CPU, instruction "
                           f"set, library versions, threads and these environment variables "
                           f"decide the floating-point path, so compare the probes with care."))
    return blocks + [table(["field", "value"], rows, f"From the eval files of "
                                                     f"{', '.join(stamps)}; only what is set "
                                                     "(the full stamp is in those files).")]
