"""What the probe verbs (``train``, ``evaluate``, ``missing-modality``) do to the metrics
that :mod:`rightsize.probes.run` returns: strict JSON, and an older sidecar's training cost."""

from __future__ import annotations

from typing import Any


def json_safe(obj: Any) -> Any:
    """Replace non-finite floats (an AUROC with one class) by None: strict JSON for jq & co."""
    if isinstance(obj, dict):
        return {k: json_safe(v) for k, v in obj.items()}
    if isinstance(obj, float) and (obj != obj or obj in (float("inf"), float("-inf"))):
        return None
    return obj


def train_cost(sidecar: dict[str, Any]) -> dict[str, float] | None:
    """The training's seconds and peak RSS where an older sidecar recorded them (a folder
    of today records none: they are measurements, and the folder holds only the model)."""
    train_s = (sidecar.get("wall_clock_s") or {}).get("train")
    if train_s is None:
        return None
    return {"train_s": float(train_s),
            "peak_rss_mb_train": float(sidecar.get("peak_rss_mb_train", 0.0))}
