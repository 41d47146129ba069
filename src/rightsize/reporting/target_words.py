"""How the report names what the probes predict: the ``target`` that ``rightsize cohort``
records in ``metrics/cohort.json`` (the ``cohort.target`` block), LVEF when it is absent."""

from __future__ import annotations

import math
from typing import Any

from rightsize.errors import DataError
from rightsize.reporting.sources import Source

#: The default target, as :class:`rightsize.cohort.target.TargetConfig` writes it.
LVEF = {"column": "lvef", "name": "LVEF", "unit": "%", "range": [0.0, 100.0],
        "threshold": 40.0}

DEFAULT_TEXT = ("What the probes predict: LVEF (left-ventricular ejection fraction, in "
                "percent; a regression scored by test MAE in EF points, lower is better) and "
                "EF ≤ {threshold} % (a classification scored by test AUROC, higher is better), "
                "from echo and ECG embeddings.")


def target(cohort: Source | None) -> dict[str, Any]:
    """The cohort's target: ``metrics/cohort.json``'s ``target``, else :data:`LVEF`;
    ``DataError`` naming the file and the field when the recorded one is malformed."""
    found = cohort.data.get("target") if cohort is not None and cohort.ok and isinstance(
        cohort.data, dict) else None
    if found is None:
        return dict(LVEF)
    t = {**LVEF, **found} if isinstance(found, dict) else None
    bad = "target" if t is None else _malformed(t)
    if bad:
        assert cohort is not None
        raise DataError(f"{cohort.path}: {bad}: not a target as `rightsize cohort` records "
                        f"it (column, name, unit: text; range: two numbers; threshold: a "
                        f"number); rerun the cohort stage")
    assert t is not None
    return t


def _number(x: Any) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x)


def _malformed(t: dict[str, Any]) -> str:
    """The first malformed field of a recorded target, or ''."""
    for key in ("column", "name", "unit"):
        if not isinstance(t.get(key), str):
            return f"target.{key}"
    r = t.get("range")
    if not (isinstance(r, list) and len(r) == 2 and all(_number(x) for x in r)):
        return "target.range"
    return "" if _number(t.get("threshold")) else "target.threshold"


def _is_lvef(t: dict[str, Any]) -> bool:
    return all(t.get(k) == LVEF[k] for k in ("column", "name", "unit", "range"))


def _unit(t: dict[str, Any]) -> str:
    return f" {t['unit']}" if t.get("unit") else ""


def targets_text(t: dict[str, Any]) -> str:
    """The sentence naming the regression target and the binary label."""
    threshold = f"{float(t['threshold']):g}"
    if _is_lvef(t):
        return DEFAULT_TEXT.format(threshold=threshold)
    unit = f"in {t['unit']}; " if t.get("unit") else ""
    return (f"What the probes predict: {t['name']} (column {t['column']} of the cohort's "
            f"labels, cohort.target; {unit}a regression scored by test MAE, lower is "
            f"better) and {t['name']} ≤ {threshold}{_unit(t)} (a classification scored by "
            "test AUROC, higher is better), from echo and ECG embeddings.")


def mae_axis(t: dict[str, Any]) -> str:
    """The axis label of a test-MAE figure."""
    if _is_lvef(t):
        return "test MAE of LVEF (EF points)"
    return f"test MAE of {t['name']}" + (f" ({t['unit']})" if t.get("unit") else "")
