"""What one fusion_dim-1024 weight product costs with the weight in cache and out of it.

The fused probe's step multiplies each 1024 x 1024 weight by a thin token basis (34 rows):
``X @ W^T`` in the forward pass, ``dY @ W`` in the backward pass (oneDNN's fp32 linear, as
:mod:`rightsize.probes.accel.gemm` calls it). This times both, 1 thread, best of 7:

* **cold**: twelve different weights in turn (48 MB, more than the L3), as a step meets them;
* **hot**: the same weight twelve times;

for 24-68 rows (the intercept of a line through the cold times is the part of a product that
does not depend on its row count), and the transposed form ``W @ X^T`` (the weight as the
product's left operand) for 16-64 columns. Prints a markdown report::

    python benchmarks/weight_products.py      # ~20 s; writes benchmarks/results/weight_products.md
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

DIM, WEIGHTS, REPEATS = 1024, 12, 7


def _best_ms(fn: Any, items: list[Any]) -> float:
    """Best milliseconds per item of ``fn`` over ``items`` in turn (after one warm-up pass)."""
    from _measure import best_seconds

    def each() -> None:
        for it in items:
            fn(it)

    each()
    return 1e3 * best_seconds(each, REPEATS) / len(items)


def measure() -> dict[str, Any]:
    """Cold and hot milliseconds per product, by row (or column) count."""
    import torch

    torch.set_num_threads(1)
    lin = torch.ops.mkldnn._linear_pointwise
    ws = [torch.randn(DIM, DIM) for _ in range(WEIGHTS)]
    hot = [ws[0]] * WEIGHTS
    rows = {}
    for m in (24, 28, 32, 34, 40, 48, 64, 68):
        x = torch.randn(m, DIM)

        def fwd(w: Any, x: Any = x) -> Any:
            return lin(x, w, None, "none", [], "")            # X @ W^T

        def bwd(w: Any, x: Any = x) -> Any:
            return lin(x, w.t(), None, "none", [], "")        # dY @ W
        rows[m] = {"fwd_cold": _best_ms(fwd, ws), "fwd_hot": _best_ms(fwd, hot),
                   "bwd_cold": _best_ms(bwd, ws), "bwd_hot": _best_ms(bwd, hot)}
    cols = {}
    for n in (16, 32, 34, 48, 64):
        x = torch.randn(n, DIM)

        def left(w: Any, x: Any = x) -> Any:
            return lin(w, x, None, "none", [], "")            # W @ X^T

        cols[n] = {"cold": _best_ms(left, ws), "hot": _best_ms(left, hot)}
    return {"rows": rows, "cols": cols}


def _intercept(points: dict[int, float]) -> tuple[float, float]:
    """Least-squares line ``a + b m`` through ``{m: ms}``: ``(a, b)``."""
    xs, ys = list(points), list(points.values())
    mx, my = sum(xs) / len(xs), sum(ys) / len(ys)
    sxy = sum((x - mx) * (y - my) for x, y in zip(xs, ys, strict=True))
    b = sxy / sum((x - mx) ** 2 for x in xs)
    return my - b * mx, b


def render(res: dict[str, Any], info: dict[str, str]) -> str:
    """The markdown report."""
    flops = {m: 2.0 * m * DIM * DIM for m in res["rows"]}
    lines = [f"# One {DIM} x {DIM} weight product, cold and hot", "",
             *(f"- {k}: {v}" for k, v in info.items()), "",
             f"1 thread, oneDNN fp32 linear, best of {REPEATS}; cold = {WEIGHTS} weights in turn "
             f"({4 * WEIGHTS * DIM * DIM / 1e6:.0f} MB), hot = one weight {WEIGHTS} times.", "",
             "| rows | X @ W^T cold ms | hot ms | dY @ W cold ms | hot ms "
             "| cold GFLOP/s (X @ W^T) |",
             "|---:|---:|---:|---:|---:|---:|"]
    for m, r in res["rows"].items():
        lines.append(f"| {m} | {r['fwd_cold']:.3f} | {r['fwd_hot']:.3f} | {r['bwd_cold']:.3f} | "
                     f"{r['bwd_hot']:.3f} | {flops[m] / r['fwd_cold'] / 1e6:.0f} |")
    for key, label in (("fwd_cold", "X @ W^T"), ("bwd_cold", "dY @ W")):
        a, b = _intercept({m: r[key] for m, r in res["rows"].items()})
        lines.append(f"\n{label}, cold: {a:.3f} ms + {1e3 * b:.1f} us per row (least squares): "
                     f"the first term does not depend on the rows.")
    lines += ["", "| columns | W @ X^T cold ms | hot ms |", "|---:|---:|---:|"]
    for n, r in res["cols"].items():
        lines.append(f"| {n} | {r['cold']:.3f} | {r['hot']:.3f} |")
    return "\n".join(lines) + "\n"


def main() -> int:
    """Measure, write results/weight_products.md (or ``--out``) and print the report."""
    import argparse

    from _measure import machine_info, write_result

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=str(HERE / "results" / "weight_products.md"))
    args = ap.parse_args()
    text = render(measure(), machine_info())
    write_result(args.out, text, "weight_products.py")
    print(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
