"""A trained probe of any kind behind one interface: LVEF predictions and EF<=40 scores.

:class:`Probe` wraps a torch module (concat, fused), a :class:`LinearEcgProbe` or an
:class:`AttentiveEchoProbe` (numpy) with the train-split target standardization. Predictions
always go through :meth:`Probe.predict` (fixed batch size, fixed order), so a probe
evaluated right after training and the same probe reloaded from its checkpoint give
bit-identical numbers.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from rightsize.probes.attentive import AttentiveEchoProbe
from rightsize.probes.data import SplitData, Standardizer
from rightsize.probes.linear import LinearEcgProbe
from rightsize.probes.names import NUMPY_PROBES

PREDICT_BATCH = 512


def encode_split(model: Any, data: SplitData, device: Any = "cpu",
                 batch: int = PREDICT_BATCH) -> dict[str, Any]:
    """``model.encode`` of every row of ``data`` (chunked, no grad): the tensors to batch."""
    import torch

    tensors = data.tensors(device)
    with torch.no_grad():
        parts = [model.encode(**{k: t[lo:lo + batch] for k, t in tensors.items()})
                 for lo in range(0, max(len(data), 1), batch)]
    return {k: torch.cat([p[k] for p in parts]) for k in parts[0]}


def predict_encoded_z(model: Any, encoded: dict[str, Any],
                      batch: int = PREDICT_BATCH) -> np.ndarray:
    """Standardized predictions (m,) float64 from :func:`encode_split` output (eval mode)."""
    import torch

    n = next(iter(encoded.values())).shape[0]
    was_training = model.training
    model.eval()
    with torch.no_grad():
        out = [model.forward_encoded(**{k: t[lo:lo + batch] for k, t in encoded.items()})
               for lo in range(0, n, batch)]
    model.train(was_training)
    if not out:
        return np.zeros(0)
    return torch.cat(out).to("cpu", torch.float64).numpy()


def predict_z(model: Any, data: SplitData, device: Any = "cpu",
              batch: int = PREDICT_BATCH) -> np.ndarray:
    """Standardized predictions (m,) float64 of torch ``model`` (eval mode, no grad)."""
    return predict_encoded_z(model, encode_split(model, data, device, batch), batch)


@dataclass
class Probe:
    """A trained probe: ``model`` (torch module, LinearEcgProbe or AttentiveEchoProbe) +
    target standardization."""

    name: str
    model: Any
    std: Standardizer
    device: Any = "cpu"

    def __post_init__(self) -> None:
        numpy_model = isinstance(self.model, (LinearEcgProbe, AttentiveEchoProbe))
        if numpy_model != (self.name in NUMPY_PROBES):
            raise TypeError(f"probe {self.name!r} cannot hold a {type(self.model).__name__}")

    @property
    def is_torch(self) -> bool:
        """True for the concat and fused torch probes (False for the numpy ECG and echo:
        :data:`~rightsize.probes.config.NUMPY_PROBES`, which checkpoints and verbs read too)."""
        return self.name not in NUMPY_PROBES

    @property
    def n_params(self) -> int:
        """Trainable parameter count."""
        if self.is_torch:
            from rightsize.probes.models import count_params

            return count_params(self.model)
        return self.model.n_params

    def predict(self, data: SplitData) -> tuple[np.ndarray, np.ndarray]:
        """``(lvef_percent, ef_le_40_score)``, both (m,) float64.

        The ECG probe scores EF<=40 with its logistic-regression logit; the others with the
        negated LVEF prediction.
        """
        if isinstance(self.model, LinearEcgProbe):
            return self.std.inverse(self.model.predict_z(data)), self.model.ef_score(data)
        if self.is_torch:
            lvef = self.std.inverse(predict_z(self.model, data, self.device))
        else:
            lvef = self.std.inverse(self.model.predict_z(data))
        return lvef, -lvef

    def mae(self, data: SplitData) -> float:
        """Mean absolute LVEF error (percent) on ``data``."""
        return float(np.mean(np.abs(self.predict(data)[0] - data.lvef)))

    def attention_entropy(self, data: SplitData) -> dict[str, float] | None:
        """Mean attention entropy per direction (nats) for the fused probe, else None.

        Averaged over heads and present queries (clip tokens for echo->ECG, the ECG token
        for ECG->echo). ``*_max`` is the mean of ``log(n_keys)`` (null token included), the
        value a uniform attention would reach; ``*_null`` the mean weight on the null token.
        """
        if self.name != "fused" or len(data) == 0:
            return None
        import torch

        t = data.tensors(self.device)
        self.model.eval()
        with torch.no_grad():
            _, w_e, w_g = self.model.fuse(**t, need_weights=True)
        w_e = w_e.to("cpu", torch.float64).numpy()            # (m, H, c, 2)
        w_g = w_g.to("cpu", torch.float64).numpy()[:, :, 0]   # (m, H, 1+c)
        q_e = data.clip_mask                                  # present echo queries
        n_e = 1 + data.has_ecg.astype(np.float64)             # keys per echo query
        n_g = 1 + data.clip_mask.sum(axis=1).astype(np.float64)
        ent_e = _entropy(w_e).mean(axis=1)                    # (m, c)
        ent_g = _entropy(w_g).mean(axis=1)                    # (m,)
        q_rows = q_e.sum()
        out = {
            "echo_to_ecg": float(ent_e[q_e].mean()) if q_rows else 0.0,
            "echo_to_ecg_max": float(np.log(np.broadcast_to(n_e[:, None], q_e.shape)[q_e]).mean())
            if q_rows else 0.0,
            "echo_to_ecg_null": float(w_e[..., 0].mean(axis=1)[q_e].mean()) if q_rows else 0.0,
            "ecg_to_echo": float(ent_g.mean()),
            "ecg_to_echo_max": float(np.log(n_g).mean()),
            "ecg_to_echo_null": float(w_g[..., 0].mean()),
        }
        return out


def _entropy(w: np.ndarray) -> np.ndarray:
    """Entropy (nats) over the last axis; zero weights contribute 0."""
    with np.errstate(divide="ignore", invalid="ignore"):
        terms = np.where(w > 0, -w * np.log(w), 0.0)
    return terms.sum(axis=-1)
