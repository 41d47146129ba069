"""Figures of token-level ECG: attention on the planted event, and the cost per token count.

* :func:`planted_attention`: per head of the fused probe's echo->ECG attention, the mean
  weight on the planted ECG event (``attention.echo_to_ecg`` of ``metrics/eval/fused.json``):
  one bar per head for seed 0 (the head its validation split chose hatched), a dot per head
  of every other seed, and uniform attention as a dashed line;
* :func:`token_cost`: the fused probe's train + evaluate seconds and peak RSS against the
  ECG token count (``metrics/token_cost.json``), extrapolated points drawn hollow.
"""

from __future__ import annotations

from typing import Any

from rightsize.fmt import num
from rightsize.reporting.doc import Figure
from rightsize.reporting.figures import _canvas, _png


def _heads(node: dict[str, Any]) -> list[float]:
    """``h0, h1, ...`` of one attention node, in head order, until the first gap."""
    out: list[float] = []
    while (v := num(node, f"h{len(out)}")) is not None:
        out.append(v)
    return out


def planted_attention(node: Any) -> Figure | None:
    """The per-head figure, or ``None`` without per-head values."""
    if not isinstance(node, dict):
        return None
    seed0, uniform = _heads(node), num(node, "uniform")
    if not seed0 or uniform is None:
        return None
    others = [_heads(node[k]) for k in sorted(node, key=lambda k: int(k[1:]) if k[1:].isdigit()
                                                else 0)
              if k.startswith("r") and k[1:].isdigit() and k != "r0" and isinstance(node[k], dict)]
    heads = range(len(seed0))
    with _canvas() as (fig, ax):
        bars = ax.bar(list(heads), seed0, width=0.6, color="#1f77b4", label="seed 0")
        chosen = num(node, "best_head_val_index")
        if chosen is not None and 0 <= int(chosen) < len(bars):
            bars[int(chosen)].set(edgecolor="black", linewidth=2, hatch="//",
                                  label="seed 0: the head validation chose")
        for i, values in enumerate(others):
            ax.plot([h + 0.15 * ((i % 4) - 1.5) for h in range(len(values))], values, "o",
                    color="#ff7f0e", markersize=5, alpha=0.8,
                    label="other seeds" if i == 0 else None)
        ax.axhline(uniform, color="#d62728", linestyle="--",
                   label=f"uniform over 1 + N keys: {uniform:.3f}")
        ax.set_xticks(list(heads), [f"head {h}" for h in heads])
        ax.set_ylim(0, 1)
        ax.set_ylabel("mean weight on the planted event")
        ax.set_title("Fused probe: echo→ECG attention on the planted ECG event")
        ax.legend(loc="upper right")
        ax.grid(axis="y", alpha=0.3)
        png = _png(fig)
    return Figure("planted_token_attention", "Echo→ECG attention on the planted ECG event",
                  png, "Per head, the mean attention weight of each echo clip on its subject's "
                       "planted ECG event's tokens (test subjects with an ECG, their present "
                       "clips); "
                       "bars: seed 0, hatched: the head its validation split chose (the one "
                       "reported); dots: the other seeds' heads (a head index means nothing "
                       "across seeds); dashed: what uniform attention would give.")


def token_cost(cases: list[dict[str, Any]]) -> Figure | None:
    """Seconds and peak RSS against ECG tokens, or ``None`` with fewer than two counts."""
    rows = sorted(((num(c, "ecg_tokens"), num(c, "train_eval_s"), num(c, "peak_rss_mb"),
                    bool(c.get("measured_whole"))) for c in cases), key=lambda r: r[0] or 0)
    rows = [r for r in rows if None not in r[:3]]
    if len(rows) < 2:
        return None
    with _canvas(2) as (fig, (ax_s, ax_m)):
        for ax, col, label in ((ax_s, 1, "train + evaluate (s)"),
                               (ax_m, 2, "peak RSS (MiB)")):
            xs = [r[0] for r in rows]
            ax.plot(xs, [r[col] for r in rows], color="#1f77b4")
            for r in rows:
                ax.plot(r[0], r[col], "o", color="#1f77b4", markersize=7,
                        markerfacecolor="#1f77b4" if r[3] else "white")
            ax.set_xlabel("ECG tokens per subject")
            ax.set_ylabel(label)
            ax.set_ylim(bottom=0)
            ax.grid(alpha=0.3)
        fig.suptitle("Fused probe at token-level ECG (one seed, whole process)")
        png = _png(fig)
    return Figure("token_cost", "Fused probe at token-level ECG", png,
                  "Whole-process train + evaluate seconds and peak RSS of the fused probe, "
                  "one seed, on the machine the table names; hollow points are extrapolated "
                  "from the timed epochs (see the table), filled ones measured whole.")
