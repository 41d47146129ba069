"""Where the calendar went: a horizontal waterfall of a run's six account parts.

One bar per part, each starting where the previous one ended, so together they tile the
calendar from its first event to its last; the bottom bar is the whole calendar. Training
that advanced the run is green, everything else is shades of grey and red, and every bar
carries its hours and share, so the answer ("half the calendar was waiting") reads at a
glance.
"""

from __future__ import annotations

from typing import Any

from rightsize.account_parts import PARTS
from rightsize.fmt import num
from rightsize.reporting.doc import Figure
from rightsize.reporting.figures import _canvas, _png


def calendar_account(run: str, account: dict[str, Any] | None,
                     calendar_hours: float | None) -> Figure | None:
    """The waterfall, or ``None`` when the telemetry file has no account."""
    if not isinstance(account, dict) or not calendar_hours:
        return None
    parts = [(label, num(account, key), color) for key, label, color in PARTS]
    if any(h is None for _, h, _ in parts):
        return None
    useful = parts[0][1]
    with _canvas() as (fig, ax):
        left = 0.0
        n = len(parts) + 1
        for i, (_label, hours, color) in enumerate(parts):
            y = n - 1 - i
            ax.barh(y, hours, left=left, height=0.7, color=color, edgecolor="black",
                    linewidth=0.5)
            text = f"{hours:,.1f} h ({100 * hours / calendar_hours:.0f} %)"
            end = left + hours
            inside = hours > 0.35 * calendar_hours
            ax.text(left + hours / 2 if inside else end + 0.01 * calendar_hours, y, text,
                    va="center", ha="center" if inside else "left",
                    color="white" if inside else "black", fontsize=11, fontweight="bold")
            left = end
        ax.barh(0, calendar_hours, height=0.7, color="#c7c7c7", edgecolor="black",
                linewidth=0.5)
        ax.text(calendar_hours / 2, 0, f"calendar {calendar_hours:,.1f} h", va="center",
                ha="center", fontsize=11, fontweight="bold")
        ax.set_yticks(range(n), ["calendar"] + [p[0] for p in parts][::-1])
        ax.set_xlim(0, calendar_hours * 1.25)
        ax.set_xlabel("calendar time from the first event (hours)")
        ax.set_title(f"{run}: where {calendar_hours:,.1f} calendar hours went "
                     f"({100 * useful / calendar_hours:.0f} % advanced training)", fontsize=11)
        ax.grid(axis="x", alpha=0.3)
        for side in ("top", "right"):
            ax.spines[side].set_visible(False)
        png = _png(fig)
    return Figure(f"{run}_calendar_account", f"{run}: where the calendar went", png,
                  "Each bar starts where the one above ended: the six parts tile the calendar "
                  "from the run's first event to its last. Green advanced training; the rest "
                  "is what a change of setup could win back.")
