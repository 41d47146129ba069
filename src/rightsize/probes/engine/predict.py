"""A trained probe of any kind behind one interface: LVEF predictions and EF<=40 scores.

:class:`Probe` is a fitted model with the train-split target standardization. The model is
whatever its trainer handed back: a :class:`~rightsize.probes.engine.torch_model.TorchModel`
(a torch module and its forward) or a numpy model (the ECG probe's
:class:`~rightsize.probes.models.ecg.LinearEcgProbe`, the echo accelerator's arrays). Each has
``predict_z(data)``, ``n_params`` and ``save(dir)``; one that scores EF<=40 its own way has
``ef_score(data)``, one that attends has ``attention(data)``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from rightsize.probes.engine.data import SplitData, Standardizer


@dataclass
class Probe:
    """A trained probe ``name``: its fitted ``model`` + target standardization."""

    name: str
    model: Any
    std: Standardizer

    @property
    def n_params(self) -> int:
        """Trainable parameter count."""
        return int(self.model.n_params)

    def predict(self, data: SplitData) -> tuple[np.ndarray, np.ndarray]:
        """``(lvef_percent, ef_le_40_score)``, both (m,) float64.

        A model with ``ef_score`` (the ECG probe's logistic-regression logit) scores EF<=40
        with it; the others with the negated LVEF prediction.
        """
        lvef = self.std.inverse(self.model.predict_z(data))
        score = getattr(self.model, "ef_score", None)
        return lvef, (score(data) if score is not None else -lvef)

    def mae(self, data: SplitData) -> float:
        """Mean absolute LVEF error (percent) on ``data``."""
        return float(np.mean(np.abs(self.predict(data)[0] - data.lvef)))

    def attention_entropy(self, data: SplitData) -> dict[str, float] | None:
        """Mean attention entropy per direction (nats) of a probe that attends, else None.

        Averaged over heads and present queries (clip tokens for echo->ECG, the ECG query
        for ECG->echo). ``*_max`` is the mean of ``log(n_keys)`` (null token included), the
        value a uniform attention would reach; ``*_null`` the mean weight on the null token.
        """
        attention = getattr(self.model, "attention", None)
        weights = attention(data) if attention is not None and len(data) else None
        if weights is None:
            return None
        import torch

        w_e, w_g = weights
        w_e = w_e.to("cpu", torch.float64).numpy()            # (m, H, c, 1+N)
        w_g = w_g.to("cpu", torch.float64).numpy()[:, :, 0]   # (m, H, 1+c)
        q_e = data.clip_mask                                  # present echo queries
        tokens = w_e.shape[-1] - 1
        n_e = 1 + tokens * data.has_ecg.astype(np.float64)    # keys per echo query
        n_g = 1 + data.clip_mask.sum(axis=1).astype(np.float64)
        ent_e = _entropy(w_e).mean(axis=1)                    # (m, c)
        ent_g = _entropy(w_g).mean(axis=1)                    # (m,)
        q_rows = q_e.sum()
        return {
            "echo_to_ecg": float(ent_e[q_e].mean()) if q_rows else 0.0,
            "echo_to_ecg_max": float(np.log(np.broadcast_to(n_e[:, None], q_e.shape)[q_e]).mean())
            if q_rows else 0.0,
            "echo_to_ecg_null": float(w_e[..., 0].mean(axis=1)[q_e].mean()) if q_rows else 0.0,
            "ecg_to_echo": float(ent_g.mean()),
            "ecg_to_echo_max": float(np.log(n_g).mean()),
            "ecg_to_echo_null": float(w_g[..., 0].mean()),
        }


def _entropy(w: np.ndarray) -> np.ndarray:
    """Entropy (nats) over the last axis; zero weights contribute 0."""
    with np.errstate(divide="ignore", invalid="ignore"):
        terms = np.where(w > 0, -w * np.log(w), 0.0)
    return terms.sum(axis=-1)
