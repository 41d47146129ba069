"""What the probes predict: the ``cohort.target`` block (a regression target and its binary
label, ``value <= threshold``).

The default is LVEF, the ejection fraction in percent, and EF <= 40 %::

    cohort:
      target: {column: lvef, name: LVEF, unit: "%", range: [0, 100], threshold: 40}

A ``files`` cohort reads ``column`` from its labels (the labels CSV or the joined file),
refuses a value outside ``range`` and labels ``value <= threshold`` true. The manifest keeps
its column names (``lvef``, ``ef_le_40``) whatever the target: they hold the target's value
and its binary label, and the manifest metadata ``target`` names it (present only when it is
not the default LVEF, so a default manifest keeps its bytes). The synthetic cohort generates
LVEF: only ``threshold`` applies to it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from rightsize.params import require

RESERVED = ("subject_id", "split", "echo_embedding", "ecg_embedding", "has_echo_embedding",
            "has_ecg_embedding")


@dataclass(frozen=True)
class TargetConfig:
    """The label column, its display name and unit, valid range and binary threshold."""

    column: str = "lvef"
    name: str = "LVEF"
    unit: str = "%"
    range: tuple[float, ...] = (0.0, 100.0)
    threshold: float = 40.0

    def validate(self, key: str) -> None:
        """One-line ParamsErrors naming ``<key>.<field>``."""
        require(bool(self.column.strip()) and self.column not in RESERVED, f"{key}.column",
                f"must name the label column (not empty, not one of {', '.join(RESERVED)}), "
                f"got {self.column!r}")
        for name, most in (("name", 40), ("unit", 20)):
            text = getattr(self, name)
            require(len(text) <= most and text.isprintable() and (name == "unit" or text.strip()),
                    f"{key}.{name}", f"must be one line of at most {most} printable characters,"
                    f" got {text!r}")
        require(len(self.range) == 2 and self.range[0] < self.range[1], f"{key}.range",
                f"must be [low, high] with low < high, got {list(self.range)}")
        lo, hi = self.range
        require(lo < self.threshold < hi, f"{key}.threshold",
                f"must lie strictly inside range [{lo:g}, {hi:g}], got {self.threshold:g}")

    @property
    def is_default(self) -> bool:
        """True for the default LVEF target (its threshold aside)."""
        return self.column == "lvef" and self.label() == TargetConfig().label()

    def label(self) -> tuple[str, str, tuple[float, ...]]:
        """``(name, unit, range)``: what the synthetic cohort must keep."""
        return self.name, self.unit, tuple(self.range)

    def as_dict(self) -> dict[str, Any]:
        """The block as JSON: ``column``, ``name``, ``unit``, ``range``, ``threshold``."""
        return {"column": self.column, "name": self.name, "unit": self.unit,
                "range": [float(v) for v in self.range], "threshold": float(self.threshold)}
