"""Markdown for ``probes_bench.py``: the comparison table, details, goals, README section.

Standard library only; every number comes from the dicts the benchmark's children printed.
"""

from __future__ import annotations

import argparse
import math
from typing import Any

Key = tuple[int, str, int]          # (max_clips, probe, fusion_dim)
SPEEDUP_ALL, SPEEDUP_1024, BOOT_GOAL_S, EFF_GOAL = 5.0, 3.0, 0.1, 0.5


def _label(key: Key) -> str:
    c, probe, d = key
    name = f"fused d={d}" if probe == "fused" else probe
    return f"{name}, clips {c}" + (" (pooled)" if c == 1 else "")


def _s(r: dict[str, Any]) -> float:
    return r["fit_s"] + r["eval_s"]


def _cpu(r: dict[str, Any]) -> float:
    return r["fit_cpu_s"] + r["eval_cpu_s"]


def _worse(key: Key, row: dict[str, dict]) -> str | None:
    """Why ours' test MAE is above the baseline's (None when it is not)."""
    o, b = row["ours"], row["baseline"]
    if o["test_mae"] <= b["test_mae"]:
        return None
    inside = b["test_mae_lo"] <= o["test_mae"] <= b["test_mae_hi"]
    return (f"{key[1]} {o['test_mae']:.2f} > {b['test_mae']:.2f}"
            f"{' (inside the baseline 95% CI)' if inside else ''}")


def _fmt(x: float | None, spec: str) -> str:
    return "—" if x is None or (isinstance(x, float) and math.isnan(x)) else format(x, spec)


def _ceiling(mms: tuple[dict, dict], shape: tuple[int, int, int], threads: int) -> float:
    key = "x".join(map(str, shape))
    t = str(threads) if str(threads) in ("1", "2") else "1"
    return max(m["shapes"][key][t] for m in mms if key in m["shapes"])


def _row(label: str, ours: float, base: float | None, mae_o: float | None,
         mae_b: float | None, gf: float | None, ref: float | None) -> str:
    speed = base / ours if base else None
    pct = 100 * gf / ref if gf and ref else None
    return (f"| {label} | {ours:.1f} | {_fmt(base, '.1f')} | {_fmt(speed, '.1f')}"
            f"{'x' if speed else ''} | {_fmt(mae_o, '.2f')} | {_fmt(mae_b, '.2f')} | "
            f"{_fmt(gf, '.1f')} | {_fmt(ref, '.1f')} | {_fmt(pct, '.0f')}{'%' if pct else ''} |")


def render(args: argparse.Namespace, cfg: Any, info: dict[str, str],
           results: dict[Key, dict[str, dict]], flops: dict[Key, dict], mms: tuple[dict, dict],
           boot: dict[str, Any], profiles: dict[Key, dict], total_s: float) -> str:
    """The whole ``results/probes.md`` text."""
    th = args.threads
    has_base = all("baseline" in r for r in results.values())
    n_test = next(iter(results.values()))["ours"]["n_test"]
    lines = [
        "# Probes: engine vs naive baseline", "",
        f"{args.subjects} subjects (train/val/test "
        f"{next(iter(results.values()))['ours']['n_train']}/"
        f"{next(iter(results.values()))['ours']['n_val']}/{n_test}), echo {args.echo_dim}-d, "
        f"ECG {args.ecg_dim}-d, params.yaml `train` block (epochs echo {cfg.echo.epochs}, "
        f"concat {cfg.concat.epochs}, fused {cfg.fused.epochs}; PCA rank {cfg.pca_rank}); "
        f"{th} thread(s) for torch, BLAS and OpenMP on both sides; CPU.", "",
        "Seconds = train + evaluate inside a fresh child process per contender and case, "
        "after imports and the manifest load (those are in the details table). Ours: "
        f"batch {cfg.batch_size}, `train_probe` + `RunLog` + `evaluate_probe`. Baseline "
        "(`naive_probes.py`): same model classes, per-row Dataset + DataLoader(batch_size=32, "
        "shuffle=True), per-batch `.item()`, sklearn bootstrap loop; **full epochs, "
        "nothing extrapolated**. \"all four\" = sum of the four per-probe cases. GFLOP/s = "
        "executed matmul FLOPs of the fit (fwd+bwd on train rows + per-epoch validation "
        "forward; torch `FlopCounterMode`, see the FLOP table) / fit seconds; matmul = fp32 "
        f"`torch.mm` on the probe's dominant matmul shape at {th} thread(s) (best of start/end "
        "of the run). The baseline runs the same model classes, hence the same FLOPs.", "",
        "Machine: " + ", ".join(f"{k} {v}" for k, v in info.items()) + ".", "",
        "| case | ours s | baseline s | speed-up | ours test MAE | baseline test MAE "
        "| ours GFLOP/s | matmul GFLOP/s | % of matmul |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    goals: list[str] = []
    clips_seen = sorted({k[0] for k in results})
    for clips in clips_seen:
        keys = [k for k in results if k[0] == clips and k[2] == 256]
        for key in keys:
            o, b = results[key]["ours"], results[key].get("baseline")
            f = flops.get(key)
            gf = f["fit"] / o["fit_s"] / 1e9 if f else None
            ref = _ceiling(mms, f["shape"], th) if f else None
            lines.append(_row(_label(key), _s(o), _s(b) if b else None, o["test_mae"],
                              b["test_mae"] if b else None, gf, ref))
        if len(keys) == 4:
            lines.append(_all_four_row(clips, keys, results, flops, mms, th, goals, has_base))
    for key in [k for k in results if k[2] != 256]:
        o, b = results[key]["ours"], results[key].get("baseline")
        f = flops[key]
        gf, ref = f["fit"] / o["fit_s"] / 1e9, _ceiling(mms, f["shape"], th)
        lines.append(_row(_label(key), _s(o), _s(b) if b else None, o["test_mae"],
                          b["test_mae"] if b else None, gf, ref))
        if b:
            sp = _s(b) / _s(o)
            floor = f["fit"] / ref / 1e9
            goals.append(f"- fused d={key[2]} clips {key[0]} >= {SPEEDUP_1024:.0f}x: "
                         f"{sp:.1f}x (by CPU seconds {_cpu(b) / _cpu(o):.1f}x), MAE "
                         f"{o['test_mae']:.2f} vs {b['test_mae']:.2f} -> "
                         f"**{'met' if sp >= SPEEDUP_1024 else 'MISSED'}**. FLOP floor of the "
                         f"fit (its FLOPs at 100 % of matmul): {floor:.1f} s, i.e. at most "
                         f"{_s(b) / floor:.1f}x at this FLOP count")
    boot_b = [r["baseline"]["boot_s"] for r in results.values() if "baseline" in r]
    b_boot = min(boot_b) if boot_b else None
    lines.append(f"| bootstrap, 2,000 resamples x {n_test} rows (MAE + AUROC) | "
                 f"{boot['best_s']:.4f} | {_fmt(b_boot, '.2f')} | "
                 f"{_fmt(b_boot / boot['best_s'] if b_boot else None, '.0f')}"
                 f"{'x' if b_boot else ''} | | | | | |")
    goals.append(f"- bootstrap <= {BOOT_GOAL_S} s: {boot['best_s'] * 1e3:.1f} ms (best of "
                 f"{args.repeat}) -> **{'met' if boot['best_s'] <= BOOT_GOAL_S else 'MISSED'}**")
    for key, f in flops.items():
        o = results[key]["ours"]
        eff = f["fit"] / o["fit_s"] / 1e9 / _ceiling(mms, f["shape"], th)
        goals.append(f"- {_label(key)} >= {EFF_GOAL:.0%} of matmul: {eff:.0%} -> "
                     f"**{'met' if eff >= EFF_GOAL else 'MISSED'}**")
    lines += ["", "## Goals", "", *goals, "", f"Whole benchmark: {total_s:.0f} s.", ""]
    lines += _profiles(results, profiles)
    lines += _details(results, flops, mms)
    return "\n".join(lines) + "\n"


def _all_four_row(clips: int, keys: list[Key], results: dict, flops: dict, mms: tuple,
                  th: int, goals: list[str], has_base: bool) -> str:
    ours = sum(_s(results[k]["ours"]) for k in keys)
    base = sum(_s(results[k]["baseline"]) for k in keys) if has_base else None
    tk = [k for k in keys if k in flops]
    fl = sum(flops[k]["fit"] for k in tk)
    gf = fl / sum(results[k]["ours"]["fit_s"] for k in tk) / 1e9
    ref = fl / sum(flops[k]["fit"] / _ceiling(mms, flops[k]["shape"], th) for k in tk)
    if base:
        sp = base / ours
        cpu = sum(_cpu(results[k]["baseline"]) for k in keys) / sum(
            _cpu(results[k]["ours"]) for k in keys)
        worse = [w for k in keys if (w := _worse(k, results[k]))]
        ok = sp >= SPEEDUP_ALL and not worse
        mae = "ours <= baseline for every probe" if not worse else "worse: " + ", ".join(worse)
        floor = sum(flops[k]["fit"] / _ceiling(mms, flops[k]["shape"], th) / 1e9 for k in tk)
        goals.append(f"- all four, clips {clips}, >= {SPEEDUP_ALL:.0f}x with test MAE <= "
                     f"baseline: {sp:.1f}x (by CPU seconds {cpu:.1f}x); MAE {mae} -> "
                     f"**{'met' if ok else 'MISSED'}**. FLOP floor of the three torch fits "
                     f"(their FLOPs at 100 % of matmul): {floor:.1f} s, i.e. at most "
                     f"{base / floor:.1f}x at this FLOP count")
    return (f"| **all four, clips {clips}** | **{ours:.1f}** | {_fmt(base, '.1f')} | "
            f"**{_fmt(base / ours if base else None, '.1f')}x** | | | {gf:.1f} | {ref:.1f} | "
            f"{100 * gf / ref:.0f}% |")


def _profiles(results: dict, profiles: dict[Key, dict]) -> list[str]:
    if not profiles:
        return []
    lines = ["## Where the fused fit's time goes", "",
             "The engine's fit for a few epochs (after a 1-epoch warm-up) under `torch.profiler`: "
             "share of profiled CPU time by category (AdamW = everything under "
             "`Optimizer.step`/`zero_grad`; other = elementwise, layer norm, batch gathers, "
             "autograd bookkeeping). s/epoch without the profiler: as built (best of a run "
             "before and after the others; the AdamW keyword arguments the engine passes are "
             "shown), and with AdamW forced to `fused=True` or "
             "to the single-tensor loop (`fused=False, foreach=False`), nothing else changed.",
             "",
             "| case | matmul | attention kernels | AdamW | other | engine's AdamW | s/epoch as "
             "built | forced fused | forced single-tensor | top ops by self time |",
             "|---|---:|---:|---:|---:|---|---:|---:|---:|---|"]
    for key, p in profiles.items():
        sh, ep = p["share"], p["epoch_s"]
        top = ", ".join(f"{k.removeprefix('aten::')} {f:.0%}" for k, f, _ in p["top"][:5])
        lines.append(
            f"| {_label(key)} | {sh['matmul']:.0%} | {sh['attention']:.0%} | "
            f"{sh['optimizer']:.0%} | {sh['other']:.0%} | {p['adamw_kwargs'] or 'defaults'} | "
            f"{ep['built']:.2f} | {ep['fused']:.2f} | {ep['single']:.2f} | {top} |")
    return lines + [""]


def _details(results: dict, flops: dict, mms: tuple[dict, dict]) -> list[str]:
    lines = ["## Details", "",
             "CPU/wall < ~0.95 at 1 thread means the child waited for a core (other load).", "",
             "| case | contender | load s | fit s | fit CPU/wall | eval s | of which bootstrap s "
             "| process s | peak RSS MB | epochs (best) | steps | test MAE [95% CI] | AUROC "
             "| fit TFLOP | GFLOP/s | load 1 min |",
             "|---|---|---:|---:|---:|---:|---:|---:|---:|---|---:|---|---:|---:|---:|---:|"]
    for key, row in results.items():
        for who, r in row.items():
            f = flops.get(key)
            ci = (f" [{r['test_mae_lo']:.2f}, {r['test_mae_hi']:.2f}]"
                  if "test_mae_lo" in r else "")
            lines.append(
                f"| {_label(key)} | {who} | {r['load_s']:.1f} | {r['fit_s']:.1f} | "
                f"{r['fit_cpu_s'] / r['fit_s']:.2f} | {r['eval_s']:.2f} | {r['boot_s']:.3f} | "
                f"{r['process_s']:.1f} | {r['rss_mb']:.0f} | {r['epochs']} ({r['best_epoch']}) | "
                f"{r['steps']} | {r['test_mae']:.2f}{ci} | {r['test_auroc']:.3f} | "
                f"{_fmt(f['fit'] / 1e12 if f else None, '.2f')} | "
                f"{_fmt(f['fit'] / r['fit_s'] / 1e9 if f else None, '.1f')} | "
                f"{r['load_avg_1min']:.2f} |")
    lines += ["", "fp32 `torch.mm` GFLOP/s (start / end of the run):", "",
              "| m x k x n | 1 thread | 2 threads |", "|---|---:|---:|"]
    for shape in mms[0]["shapes"]:
        a, b = mms[0]["shapes"][shape], mms[1]["shapes"].get(shape, {})
        lines.append(f"| {shape} | {a['1']:.1f} / {_fmt(b.get('1'), '.1f')} | "
                     f"{a['2']:.1f} / {_fmt(b.get('2'), '.1f')} |")
    lines += ["", "FLOPs per row (MFLOP, every clip slot incl. padding; `probe_flops.py`). "
              "Reference formulation = inputs projected back to full width, full-width linear "
              "layers (frozen PCA fwd / first-layer fwd / inner fwd -> fwd+bwd); executed = "
              "torch `FlopCounterMode` on one training step of the current model classes at "
              "the engine's batch size. Dominant matmul = the `mm`/`addmm` shape with the most "
              "FLOPs in that step; matmul-mix ceiling = the step's FLOPs / the sum of every "
              "`mm`/`addmm` shape timed alone (what the fit would reach if nothing but its own "
              "matmuls took time):", "",
              "| case | reference: frozen / first / inner fwd | reference train | executed train "
              "| executed fwd | dominant matmul (share) | matmul-mix ceiling GFLOP/s "
              "| ours % of mix |",
              "|---|---|---:|---:|---:|---|---:|---:|"]
    for key, f in flops.items():
        fr, fi, inn, rt, _ = f["ref"]
        gf = f["fit"] / results[key]["ours"]["fit_s"] / 1e9
        lines.append(f"| {_label(key)} | {fr / 1e6:.3f} / {fi / 1e6:.3f} / {inn / 1e6:.3f} | "
                     f"{rt / 1e6:.3f} | {f['train'] / 1e6:.3f} | {f['forward'] / 1e6:.3f} | "
                     f"{'x'.join(map(str, f['shape']))} ({f['dominant_share']:.0%}) | "
                     f"{f['mix']:.1f} | {100 * gf / f['mix']:.0f}% |")
    return lines


def readme_section(md: str) -> str:
    """The README "Probes" section: how to run, the goals, and the latest table."""
    lines = md.splitlines()
    first = next(i for i, ln in enumerate(lines) if ln.startswith("| case | ours s"))
    last = next((i for i in range(first, len(lines)) if not lines[i].startswith("|")),
                len(lines))
    goals = md.split("## Goals", 1)[1].split("## Details", 1)[0].strip().splitlines()
    goals = [g for g in goals if g.startswith("- ")]
    return "\n".join([
        "## Probes", "",
        "`probes_bench.py` times the probe engine (`train_probe` + `evaluate_probe`) against "
        "`naive_probes.py`, a tutorial-style baseline with the **same model classes** (per-row "
        "Dataset + `DataLoader(batch_size=32, shuffle=True)`, per-batch `.item()`, a Python "
        "loop of 2,000 sklearn `mean_absolute_error`/`roc_auc_score` calls), each probe at "
        "`max_clips` 1 and 8 (fusion_dim 256) and fused at fusion_dim 1024, one fresh child per "
        "contender and case, 1 thread each. It also counts the matmul FLOPs the probes execute "
        "(`probe_flops.py`: torch's `FlopCounterMode`, next to the plain reference "
        "formulation) and times fp32 `torch.mm` on each probe's dominant matmul shape in the "
        "same run, so achieved GFLOP/s sit next to the ceiling; for the fused probe it adds a "
        "`torch.profiler` breakdown of the fit (`probe_profile.py`).", "",
        "```bash",
        "python benchmarks/probes_bench.py     # ~6-10 min on 2 cores; writes results/probes.md "
        "and this section",
        "python benchmarks/probes_bench.py --clips 1 --probes echo --fused-1024-clips "
        "--no-readme --out-md /tmp/p.md   # quick look",
        "```", "",
        "Goals: all four probes >= 5x faster than the baseline with equal or better test MAE; "
        "fused at fusion_dim 1024 >= 3x; the 2,000-resample bootstrap <= 0.1 s; each torch "
        "probe >= 50 % of the matmul GFLOP/s.", "",
        "Reading it: the baseline runs the same model classes, so a FLOP saving in "
        "`models.py` speeds up both sides; the ratio comes only from the training loop, the "
        "optimizer and the evaluation. Each speed-up goal line gives the FLOP floor (the fit's "
        "executed FLOPs at 100 % of the measured matmul rate), i.e. the most any engine could "
        "reach against this baseline at 1 thread without doing less work than it. Training "
        "is seeded but ours and the baseline draw different batches (64 vs 32 rows), so their "
        "test MAEs differ by run-to-run noise; compare them with the 95 % CIs in the details.",
        "",
        "Latest run ([results/probes.md](results/probes.md), which also has the machine, "
        "load average, per-child details and the FLOP check):", "",
        *lines[first:last], "", *goals,
    ])


def replace_section(text: str, section: str, start: str, end: str) -> str:
    """``text`` with the block between ``start`` and ``end`` replaced (appended if absent)."""
    block = f"{start}\n{section}\n{end}"
    if start in text and end in text and text.index(start) < text.index(end):
        a, b = text.index(start), text.index(end) + len(end)
        return text[:a] + block + text[b:]
    return text.rstrip("\n") + "\n\n" + block + "\n"
