"""A token-level recipe's cost against the pooled fused probe: ``rightsize token-cost`` pairs.

The recipe of docs/tokens.md (``train.fused`` fusion_dim 32, heads 1, hidden 64, 80 epochs)
on the synthetic cohort at 4,104 subjects (2,816 / 445 / 843), ``token_cost.epochs_timed: 0``
(every epoch trained: measured whole), one seed: each case one ``rightsize token-cost
--tokens N`` process, as the ``token_cost_case@N`` stage runs it, at N = 1 and 93 in
alternating order (``--rounds`` pairs). Per case the train + evaluate seconds, build seconds
and peak RSS; per round the ratio N / 1 (the speed goal at 93: at most 3x). With
``--shipped`` the shipped params instead (default cohort and events, the shipped
``train.fused``: its pooled recipe at N = 1, ``train.fused.tokens`` at N > 1), still measured
whole: what a token-level run costs against a pooled one.

    python benchmarks/token_cost_recipe.py --rounds 2
    python benchmarks/token_cost_recipe.py --shipped --rounds 3 --tokens 93 186 \\
        --out benchmarks/results/token_cost_shipped.md
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

import yaml

HERE = Path(__file__).parent
_R = {"fusion_dim": 32, "heads": 1, "hidden": 64, "epochs": 80}
RECIPE = {"cohort": {"n_subjects": 4104, "splits": {"train": 2816, "val": 445, "test": 843},
                     "ecg_events": 0},                  # the one-token event it was made for
          "train": {"fused": {**_R, "tokens": _R}},       # pooled and token-level alike
          "token_cost": {"epochs_timed": 0}}


def merged(base: dict, over: dict) -> dict:
    """``base`` with ``over``'s leaves written in."""
    out = dict(base)
    for k, v in over.items():
        out[k] = merged(out.get(k) or {}, v) if isinstance(v, dict) else v
    return out


def case(params: Path, tokens: int, work: Path) -> dict:
    """One ``rightsize token-cost --tokens`` process; its case node."""
    out = work / f"tokens_{tokens}.json"
    cli = Path(sys.executable).with_name("rightsize")
    subprocess.run([str(cli), "token-cost", "-q", "--params", str(params), "--tokens",
                    str(tokens), "--json", str(out)], check=True)
    return json.loads(out.read_text())["case"]


def main() -> None:
    """Run the pairs and write the table."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--out", default=str(HERE / "results" / "token_cost_recipe.md"))
    ap.add_argument("--shipped", action="store_true",
                    help="the shipped params (default cohort and train.fused), not the recipe")
    ap.add_argument("--tokens", type=int, nargs="+", default=[93])
    a = ap.parse_args()
    over = {"token_cost": {"epochs_timed": 0}} if a.shipped else RECIPE
    rows = ["| round | ECG tokens | train + evaluate (s) | build (s) | peak RSS (MB) | "
            "accelerator | N / 1 |", "|---:|---:|---:|---:|---:|---|---:|"]
    ratios: dict[int, list[float]] = {n: [] for n in a.tokens}
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        params = work / "params.yaml"
        params.write_text(yaml.safe_dump(merged(yaml.safe_load(Path("params.yaml").read_text()),
                                                over), sort_keys=False))
        for r in range(1, a.rounds + 1):
            order = [1, *a.tokens] if r % 2 else [*a.tokens[::-1], 1]
            got = {n: case(params, n, work) for n in order}
            for n in (1, *a.tokens):
                c = got[n]
                last = "|"
                if n != 1:
                    ratios[n].append(c["train_eval_s"] / got[1]["train_eval_s"])
                    last = f"{ratios[n][-1]:.2f}x |"
                rows.append(f"| {r} | {n} | {c['train_eval_s']:.1f} | {c['build_s']:.1f} | "
                            f"{c['peak_rss_mb']:.0f} | {c.get('accelerator')} | {last}")
                print(rows[-1], flush=True)
    what = ("the shipped params on the default cohort (the pooled recipe at 1 token, "
            "`train.fused.tokens` above)" if a.shipped else
            "the one-token recipe's params (fusion_dim 32, heads 1, hidden 64, 80 epochs) at "
            "4,104 subjects")
    medians = "; ".join(f"{n} / 1 median {statistics.median(v):.2f}x, fastest {min(v):.2f}x"
                        for n, v in ratios.items())
    notes = ("# A token-level recipe's cost against the pooled fused probe (issue 32, item 3)"
             f"\n\n`rightsize token-cost` at 1 and {', '.join(map(str, a.tokens))} ECG tokens "
             f"with {what},\n`epochs_timed: 0` (every epoch trained: measured whole), one "
             "seed, 1 thread, alternating order.\n"
             f"{medians} (goal at 93: <= 3x).\n")
    sys.path.insert(0, str(HERE))
    from _measure import write_result

    write_result(a.out, notes + "\n" + "\n".join(rows), Path(__file__).name)


if __name__ == "__main__":
    main()
