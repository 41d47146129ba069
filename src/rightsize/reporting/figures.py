"""The report's figures: matplotlib (Agg backend, imported lazily) rendered to PNG bytes.

Every figure is 8 x 4 in at 100 dpi with fonts >= 10 pt, a title and axis labels with
units. Each function returns a :class:`~rightsize.reporting.doc.Figure` or ``None`` when the
data to draw it is absent (the section then says so in words).
"""

from __future__ import annotations

import contextlib
import contextvars
import io
import math
from collections.abc import Iterator, Sequence
from datetime import datetime
from typing import Any

from rightsize.fmt import as_float, num
from rightsize.reporting.doc import Figure

FIGSIZE = (8.0, 4.0)
DPI = 100
STYLE = {"font.size": 11, "axes.titlesize": 12, "axes.labelsize": 11, "xtick.labelsize": 10,
         "ytick.labelsize": 10, "legend.fontsize": 10, "figure.titlesize": 12}
GAP_COLOR = "#d62728"
STAMP_COLOR = "#8b0000"
_STAMP: contextvars.ContextVar[str] = contextvars.ContextVar("figure_stamp", default="")


def _pyplot() -> Any:
    import matplotlib

    matplotlib.use("Agg", force=True)
    import matplotlib.pyplot as plt

    return plt


@contextlib.contextmanager
def _canvas(ncols: int = 1) -> Iterator[tuple[Any, Any]]:
    plt = _pyplot()
    with plt.rc_context(STYLE):
        fig, ax = plt.subplots(1, ncols, figsize=FIGSIZE, dpi=DPI)
        try:
            yield fig, ax
        finally:
            plt.close(fig)


@contextlib.contextmanager
def stamped(text: str) -> Iterator[None]:
    """Figures drawn inside carry ``text`` in their lower right corner ("synthetic cohort"),
    so a PNG seen on its own (``dvc plots diff``, a slide) still says what its data are."""
    token = _STAMP.set(text)
    try:
        yield
    finally:
        _STAMP.reset(token)


def _png(fig: Any, layout: bool = True) -> bytes:
    """PNG bytes without the 'Software' text chunk (no URL inside, same bytes every run)."""
    if layout:
        fig.tight_layout()
    if _STAMP.get():
        fig.text(0.995, 0.008, _STAMP.get(), ha="right", va="bottom", fontsize=9,
                 color=STAMP_COLOR, style="italic")
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=DPI, metadata={"Software": None})
    return buf.getvalue()


def _integer_x(ax: Any) -> None:
    from matplotlib.ticker import MaxNLocator

    ax.xaxis.set_major_locator(MaxNLocator(integer=True))


def _finite_pairs(xs: Sequence[Any], ys: Sequence[Any]) -> tuple[list[float], list[float]]:
    px, py = [], []
    for x, y in zip(xs, ys, strict=False):
        try:
            fx, fy = float(x), float(y)
        except (TypeError, ValueError):      # None or a damaged value: not a point
            continue
        if math.isfinite(fx) and math.isfinite(fy):
            px.append(fx)
            py.append(fy)
    return px, py


def val_curve(run: str, epochs: Sequence[Any], values: Sequence[Any],
              best_epoch: Any = None, best_val: Any = None) -> Figure | None:
    """Validation loss per epoch of a rescued run, best epoch marked."""
    xs, ys = _finite_pairs(epochs, values)
    if not xs:
        return None
    with _canvas() as (fig, ax):
        ax.plot(xs, ys, marker="o", markersize=4, color="#1f77b4", label="validation loss")
        if isinstance(best_epoch, int | float) and not isinstance(best_epoch, bool):
            by = best_val if isinstance(best_val, int | float) else None
            if by is None and best_epoch in xs:
                by = ys[xs.index(float(best_epoch))]
            ax.axvline(best_epoch, color="#2ca02c", linestyle="--", linewidth=1)
            if by is not None:
                ax.plot([best_epoch], [by], marker="*", markersize=16, color="#2ca02c",
                        linestyle="none", label=f"best epoch {best_epoch:g} ({by:.4g})")
        _integer_x(ax)
        ax.set_title(f"{run}: validation loss per epoch")
        ax.set_xlabel("epoch (count)")
        ax.set_ylabel("validation loss (as logged)")
        ax.grid(alpha=0.3)
        ax.legend(loc="best")
        png = _png(fig)
    return Figure(f"{run}_val_curve", f"{run}: validation loss per epoch", png,
                  "Validation loss at each epoch boundary; the star marks the best epoch.")


def _quartile(row: dict[str, Any], which: str) -> float | None:
    for key in (f"{which}_step_s", f"step_s_{which}", which):
        v = num(row, key)
        if v is not None:
            return v
    return None


def step_time_box(run: str, segments: Sequence[dict[str, Any]],
                  overall: dict[str, Any] | None) -> Figure | None:
    """One box per segment (median, and quartiles where recorded) plus the whole run."""
    stats, labels = [], []
    for i, row in enumerate(segments, start=1):
        med = num(row, "median_step_s")
        if med is None:
            continue
        q1, q3 = _quartile(row, "p25") or med, _quartile(row, "p75") or med
        lo, hi = num(row, "min_step_s") or q1, num(row, "max_step_s") or q3
        stats.append({"med": med, "q1": q1, "q3": q3, "whislo": lo, "whishi": hi})
        host = str(row.get("host") or "?")
        host = host if len(host) <= 14 else host.split(".")[0][:14]
        labels.append(f"{i}\n{host}" if len(segments) <= 8 else str(i))
    if overall and num(overall, "median") is not None:
        med = num(overall, "median")
        q1, q3 = num(overall, "p25") or med, num(overall, "p75") or med
        stats.append({"med": med, "q1": q1, "q3": q3, "whislo": q1, "whishi": q3})
        labels.append("all\nsteps")
    if not stats:
        return None
    with _canvas() as (fig, ax):
        ax.bxp(stats, showfliers=False, patch_artist=True,
               boxprops={"facecolor": "#aec7e8"}, medianprops={"color": "#d62728", "linewidth": 2})
        ax.set_xticks(range(1, len(labels) + 1), labels)
        ax.set_title(f"{run}: step time per segment")
        ax.set_xlabel("segment (launch) and host" if len(segments) <= 8 else "segment (launch)")
        ax.set_ylabel("step time (s)")
        ax.grid(axis="y", alpha=0.3)
        png = _png(fig)
    return Figure(f"{run}_step_time", f"{run}: step time per segment", png,
                  "Red line: median step time of each segment; boxes span p25-p75 where "
                  "recorded (the last box is the whole run).")


def to_epoch_seconds(t: Any) -> float | None:
    """Seconds since the epoch from a number or an ISO-8601 string; ``None`` otherwise."""
    if isinstance(t, bool):
        return None
    if isinstance(t, int | float):
        return float(t) if math.isfinite(t) else None
    if isinstance(t, str):
        try:
            return datetime.fromisoformat(t.replace("Z", "+00:00")).timestamp()
        except ValueError:
            return None
    return None


def timeline(run: str, segments: Sequence[dict[str, Any]], active_hours: float | None = None,
             calendar_hours: float | None = None) -> Figure | None:
    """Preemption timeline: one row per launch over calendar time, gaps shaded, hosts named.

    Launches that logged steps are bars; launches with no steps (header-only files) are
    diamonds. Gaps are calendar time covered by no training bar.
    """
    rows = []
    for i, row in enumerate(segments, start=1):
        a, b = to_epoch_seconds(row.get("start_time")), to_epoch_seconds(row.get("end_time"))
        if a is None or b is None or b < a:
            continue
        trained = as_float(row.get("steps")) != 0 and b > a
        rows.append((i, a, b, str(row.get("host") or "?"), row.get("pid"), trained))
    bars = [(a, b) for _, a, b, _, _, trained in rows if trained]
    if not bars:
        return None
    t0, t_end = min(r[1] for r in rows), max(r[2] for r in rows)
    span = max((t_end - t0) / 3600, 1e-6)
    cal = calendar_hours if calendar_hours is not None else span
    act = active_hours if active_hours is not None else sum(b - a for a, b in bars) / 3600
    hosts = list(dict.fromkeys(r[3] for r in rows))
    with _canvas() as (fig, ax):
        from matplotlib.lines import Line2D
        from matplotlib.patches import Patch

        palette = _pyplot().get_cmap("tab10")
        color = {h: palette(k % 10) for k, h in enumerate(hosts)}
        n = len(rows)
        for row_i, (_, a, b, host, _pid, trained) in enumerate(rows):
            y, x0, w = n - 1 - row_i, (a - t0) / 3600, (b - a) / 3600
            if trained:
                ax.barh(y, w, left=x0, height=0.6, color=color[host], edgecolor="black",
                        linewidth=0.5)
                _label_bar(ax, x0, w, y, host, span)
            else:
                ax.plot([x0], [y], marker="D", markersize=7, color=color[host],
                        markeredgecolor="black", linestyle="none")
                _label_bar(ax, x0, 0.0, y, f"{host} (no steps)", span, pad=0.02)
        gaps = _gaps(bars)
        for a, b in gaps:
            ax.axvspan((a - t0) / 3600, (b - t0) / 3600, color=GAP_COLOR, alpha=0.15, lw=0)
            if (b - a) / 3600 >= 0.07 * span:
                ax.text(((a + b) / 2 - t0) / 3600, n - 0.45, f"gap {(b - a) / 3600:.2g} h",
                        ha="center", va="bottom", fontsize=10, color=GAP_COLOR)
        ax.set_yticks(range(n), [f"launch {i}" + (f" (pid {pid})" if pid is not None else "")
                                 for i, _, _, _, pid, _ in reversed(rows)])
        ax.set_ylim(-0.6, n + 0.2)
        ax.set_xlim(0, span * 1.02)
        ax.set_xlabel("calendar time since first launch (h)")
        ax.set_title(f"{run}: preemption timeline, active {act:.3g} h of {cal:.3g} h calendar")
        ax.grid(axis="x", alpha=0.3)
        handles = [Patch(facecolor="#bbbbbb", edgecolor="black", label="training segment"),
                   Patch(facecolor=GAP_COLOR, alpha=0.15, label="gap (not training)")]
        if len(bars) < n:
            handles.append(Line2D([], [], marker="D", color="#bbbbbb", markeredgecolor="black",
                                  linestyle="none", label="launch with no steps"))
        fig.legend(handles=handles, loc="lower center", ncol=len(handles), fontsize=10,
                   frameon=False)
        fig.tight_layout(rect=(0, 0.07, 1, 1))
        png = _png(fig, layout=False)
    return Figure(f"{run}_timeline", f"{run}: preemption timeline", png,
                  f"One row per launch (event file), labelled with its host; bar colour = host; "
                  f"shaded: gaps. Active {act:.3g} h vs calendar {cal:.3g} h.")


def _label_bar(ax: Any, x0: float, w: float, y: float, text: str, span: float,
               pad: float = 0.01) -> None:
    """Host name inside its bar when it fits, else beside it (right, or left at the end)."""
    axes_px = 600.0                       # about the axes width at 8 in
    fits = len(text) * 7.0 < w / max(span, 1e-9) * axes_px
    if fits:
        ax.text(x0 + w / 2, y, text, ha="center", va="center", fontsize=10)
    elif x0 + w < 0.7 * span:
        ax.text(x0 + w + span * pad, y, text, ha="left", va="center", fontsize=10)
    else:
        ax.text(x0 - span * pad, y, text, ha="right", va="center", fontsize=10)


def _gaps(spans: list[tuple[float, float]]) -> list[tuple[float, float]]:
    """Intervals of calendar time covered by no span."""
    out = []
    spans = sorted(spans)
    reach = spans[0][1]
    for a, b in spans[1:]:
        if a > reach:
            out.append((reach, a))
        reach = max(reach, b)
    return out


def probe_curve(probe: str, columns: dict[str, Any], best_epoch: Any = None) -> Figure | None:
    """Train and validation loss per epoch of one probe (``None`` below two epochs)."""
    epochs = columns.get("epoch")
    if epochs is None or len(epochs) < 2:
        return None
    drawn = False
    with _canvas() as (fig, ax):
        for col, colour in (("train_loss", "#1f77b4"), ("val_loss", "#ff7f0e")):
            if col in columns:
                xs, ys = _finite_pairs(list(epochs), list(columns[col]))
                if xs:
                    ax.plot(xs, ys, marker="o", markersize=3, color=colour,
                            label=col.replace("_", " "))
                    drawn = True
        if not drawn:
            return None
        if isinstance(best_epoch, int | float) and not isinstance(best_epoch, bool):
            ax.axvline(best_epoch, color="#2ca02c", linestyle="--", linewidth=1,
                       label=f"best epoch {best_epoch:g}")
        _integer_x(ax)
        ax.set_title(f"probe {probe}: loss per epoch")
        ax.set_xlabel("epoch (count)")
        ax.set_ylabel("loss (training objective)")
        ax.grid(alpha=0.3)
        ax.legend(loc="best")
        png = _png(fig)
    return Figure(f"probe_{probe}_curve", f"probe {probe}: train and validation loss", png,
                  "Loss per epoch on the train and validation splits; dashed: best epoch.")


def intervals(name: str, title: str,
              panels: Sequence[tuple[str, Sequence[tuple[str, Any, Any, Any]]]],
              caption: str) -> Figure | None:
    """Point estimates with 95 % intervals, one panel per metric (rows: label, value, lo, hi)."""
    panels = [(xl, [r for r in rows if as_float(r[1]) is not None]) for xl, rows in panels]
    panels = [(xl, rows) for xl, rows in panels if rows]
    if not panels:
        return None
    with _canvas(len(panels)) as (fig, axes):
        axes = list(axes) if len(panels) > 1 else [axes]
        for ax, (xlabel, rows) in zip(axes, panels, strict=True):
            ys = list(range(len(rows)))[::-1]
            for y, (_, v, lo, hi) in zip(ys, rows, strict=True):
                lo_f = float(lo) if as_float(lo) is not None else float(v)
                hi_f = float(hi) if as_float(hi) is not None else float(v)
                ax.errorbar(float(v), y, xerr=[[float(v) - lo_f], [hi_f - float(v)]], fmt="o",
                            color="#1f77b4", capsize=4, markersize=6)
            ax.set_yticks(ys, [r[0] for r in rows])
            ax.set_ylim(-0.7, len(rows) - 0.3)
            ax.set_xlabel(xlabel)
            ax.grid(axis="x", alpha=0.3)
        fig.suptitle(title)
        png = _png(fig)
    return Figure(name, title, png, caption)


def wall_clock(rows: Sequence[tuple[str, Any, Any]]) -> Figure | None:
    """Stacked horizontal bars: train and eval wall-clock seconds per probe."""
    rows = [(p, as_float(t) or 0.0, as_float(e) or 0.0) for p, t, e in rows]
    rows = [r for r in rows if r[1] or r[2]]
    if not rows:
        return None
    with _canvas() as (fig, ax):
        ys = list(range(len(rows)))[::-1]
        train = [r[1] for r in rows]
        ev = [r[2] for r in rows]
        ax.barh(ys, train, color="#1f77b4", label="train")
        ax.barh(ys, ev, left=train, color="#ff7f0e", label="evaluate")
        top = max(t + e for t, e in zip(train, ev, strict=True))
        for y, t, e in zip(ys, train, ev, strict=True):
            ax.text(t + e + top * 0.01, y, f"{t + e:.3g} s", va="center", fontsize=10)
        ax.set_yticks(ys, [r[0] for r in rows])
        ax.set_xlim(0, top * 1.15)
        ax.set_xlabel("wall-clock (s)")
        ax.set_ylabel("probe")
        ax.set_title("Probe wall-clock per phase")
        ax.legend(loc="upper right")
        ax.grid(axis="x", alpha=0.3)
        png = _png(fig)
    return Figure("probe_wall_clock", "Probe wall-clock per phase", png,
                  "Seconds spent training and evaluating each probe on the stated hardware.")


def payload(table: Sequence[dict[str, Any]], configured: Any = None,
            measured_bytes: Any = None) -> Figure | None:
    """Embedding payload (MB) against ``max_clips``; the configured value and manifest marked."""
    xs, ys = _finite_pairs([r.get("max_clips") for r in table],
                           [r.get("payload_bytes") for r in table])
    if not xs:
        return None
    order = sorted(range(len(xs)), key=xs.__getitem__)
    xs, ys = [xs[i] for i in order], [ys[i] / 1e6 for i in order]
    with _canvas() as (fig, ax):
        ax.plot(xs, ys, marker="o", color="#1f77b4", label="float32 payload")
        if as_float(configured) is not None:
            ax.axvline(float(configured), color="#2ca02c", linestyle="--",
                       label=f"configured max_clips = {float(configured):g}")
        if as_float(measured_bytes) is not None and as_float(configured) is not None:
            ax.plot([float(configured)], [float(measured_bytes) / 1e6], marker="s", markersize=8,
                    color="#d62728", linestyle="none", label="manifest on disk")
        ax.set_title("Embedding payload vs clips per study")
        ax.set_xlabel("max clips per study (count)")
        ax.set_ylabel("payload (MB)")
        ax.grid(alpha=0.3)
        ax.legend(loc="upper left")
        png = _png(fig)
    return Figure("payload_vs_clips", "Embedding payload vs clips per study", png,
                  "Bytes of float32 embeddings for the cohort at each max_clips (decimal MB).")
