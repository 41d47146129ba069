"""The README "Probes" section of ``probes_bench.py``, made from its ``results/probes.md``.

Standard library; a pure function of the markdown, so a committed section can be checked
against (or rebuilt from) the results file it quotes.
"""

from __future__ import annotations

import re

from probes_report import PREVIOUS


def _runs(md: str) -> str:
    """How many fresh children per contender and case ``md`` reports, in words."""
    n = int(re.search(r"the fastest of (\d+) per contender", md).group(1))
    return {2: "two", 3: "three", 4: "four", 5: "five"}.get(n, str(n))


def readme_section(md: str) -> str:
    """The README "Probes" section: how to run, the goals, and the latest table."""
    lines = md.splitlines()
    first = next(i for i, ln in enumerate(lines) if ln.startswith("| case | ours s"))
    last = next((i for i in range(first, len(lines)) if not lines[i].startswith("|")),
                len(lines))
    goals = md.split("## Goals", 1)[1].split("## ", 1)[0].strip().splitlines()
    goals = [g for g in goals if g.startswith("- ")]
    return "\n".join([
        "## Probes", "",
        "`probes_bench.py` times the probe engine (`train_probe` + `evaluate_probe`) against "
        "`naive_probes.py`, a baseline with the **same architectures and initial parameters "
        "computed by each probe's textbook forward** (no accelerator; the probe module's own "
        "`forward` on raw inputs) and trained tutorial-style "
        "(per-row Dataset + `DataLoader(batch_size=32, shuffle=True)`, default "
        "`torch.optim.AdamW`, per-batch `.item()`, a Python loop of 2,000 sklearn "
        "`mean_absolute_error`/`roc_auc_score` calls), each probe at `max_clips` 1 and 8 "
        f"(fusion_dim 256) and fused at fusion_dim 1024, the fastest of {_runs(md)} fresh "
        "children per "
        "contender and case (interleaved), 1 thread each, full epochs, nothing extrapolated. "
        "It counts each side's "
        "executed FLOPs (`probe_flops.py`: torch's `FlopCounterMode`) and the model FLOPs "
        "6·P·N·E, and times fp32 matmul (`torch.mm`, i.e. MKL, and oneDNN's fp32 linear, which "
        "the engine's hand-written steps call; the faster is the ceiling) on each probe's "
        "dominant matmul shape in the same "
        "run, so achieved GFLOP/s sit next to the ceiling; for the fused probe it adds a "
        "`torch.profiler` breakdown of the fit (`probe_profile.py`).", "",
        "```bash",
        "python benchmarks/probes_bench.py     # ~13-15 min on 2 cores; writes results/probes.md "
        "and this section",
        "python benchmarks/probes_bench.py --clips 1 --probes echo --fused-1024-clips "
        "--no-readme --out-md /tmp/p.md   # quick look",
        "```", "",
        "Goals: all four probes >= 5x faster than the baseline with equal or better test MAE "
        "(clips 1 and 8); fused at fusion_dim 1024 >= 3x; the 2,000-resample bootstrap <= "
        "0.1 s; each torch probe >= 50 % of the matmul GFLOP/s in model FLOPs (6·P·N·E / fit "
        "seconds; the executed-FLOP percentage is given next to it).", "",
        "Reading it: the engine computes the same function from the same parameters as the "
        "baseline (`tests/probes/test_probes_accel_*.py` check outputs and gradients "
        "against the textbook forward) with fewer FLOPs, so a fit's speed-up = executed-FLOP "
        "ratio (baseline/ours) x throughput ratio (ours' GFLOP/s / the baseline's); the table "
        "has the first, results/probes.md each side's GFLOP/s. The previous benchmark (the "
        f"engine's model classes on both sides, before this rewrite) measured {PREVIOUS}. "
        "Each speed-up goal line gives ours' FLOP floor (its executed FLOPs at 100 % of the "
        "measured matmul rate), the most this engine could reach at its FLOP count. On a "
        "shared VM the same code's fit time can swing by half between runs with CPU/wall at "
        "1.00 (the host's phase, not the process): compare several runs before reading a "
        "ratio near its goal. Training "
        "is seeded but ours and the baseline draw different batches (64 vs 32 rows), so their "
        "test MAEs differ by run-to-run noise. \"Equal or better test MAE\" is therefore "
        "read statistically: the goal line gives ours' minus the baseline's MAE on the same "
        "test rows with a paired bootstrap 95 % CI, and a probe fails only when that CI lies "
        "entirely above 0 (significantly worse); the point values are listed either way.",
        "",
        "Latest run ([results/probes.md](results/probes.md), which also has the machine, "
        "load average, per-child details and the FLOP table):", "",
        *lines[first:last], "", *goals,
    ])


def replace_section(text: str, section: str, start: str, end: str) -> str:
    """``text`` with the block between ``start`` and ``end`` replaced (appended if absent)."""
    block = f"{start}\n{section}\n{end}"
    if start in text and end in text and text.index(start) < text.index(end):
        a, b = text.index(start), text.index(end) + len(end)
        return text[:a] + block + text[b:]
    return text.rstrip("\n") + "\n\n" + block + "\n"
