"""A fitted torch probe: its module, its inference forward, and its weights file.

:class:`TorchModel` is what a torch probe's replica trainer hands back and what a
checkpoint loads: the probe's textbook module (``rightsize.probes.<probe>``) plus the
forward it predicts with, the textbook one or an accelerator's (:mod:`rightsize.probes.accel`;
chosen when the model is built, kept with it). Predictions go through :func:`predict_z`
(fixed batch size, fixed order), so a probe evaluated right after training and the same
probe reloaded from its checkpoint give bit-identical numbers.
"""

from __future__ import annotations

import os
import pickle
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch import nn

from rightsize.atomic import atomic_path
from rightsize.errors import DataError
from rightsize.probes import accel
from rightsize.probes.engine.data import SplitData

PREDICT_BATCH = 512
ENCODE_TOKEN_ROWS = 8192   # most ECG token rows encoded or predicted at once (N > 1)
WEIGHTS = "weights.pt"
Forward = Callable[..., torch.Tensor]


def _token_batch(batch: int, ecg_shape: tuple[int, ...]) -> int:
    """``batch`` subjects, at most :data:`ENCODE_TOKEN_ROWS` // N of them when the ECG holds
    N tokens per subject (shape ``(m, N, d)``); ``batch`` for a pooled ECG."""
    if len(ecg_shape) != 3:
        return batch
    return max(1, min(batch, ENCODE_TOKEN_ROWS // ecg_shape[1]))


def encode_split(model: nn.Module, data: SplitData, device: Any = "cpu",
                 batch: int = PREDICT_BATCH) -> dict[str, torch.Tensor]:
    """``model.encode`` of every row of ``data`` (chunked, no grad): the tensors to batch.

    Chunks of ``batch`` subjects; with N > 1 ECG tokens, of at most
    :data:`ENCODE_TOKEN_ROWS` // N subjects (the standardization's temporaries of 512 x 186
    tokens would take 0.6 GB).
    """
    tensors = data.tensors(device)
    batch = _token_batch(batch, data.ecg.shape)
    with torch.no_grad():
        parts = [model.encode(**{k: t[lo:lo + batch] for k, t in tensors.items()})
                 for lo in range(0, max(len(data), 1), batch)]
    return {k: torch.cat([p[k] for p in parts]) for k in parts[0]}


def predict_encoded_z(model: nn.Module, encoded: dict[str, torch.Tensor],
                      forward: Forward | None = None, batch: int = PREDICT_BATCH) -> np.ndarray:
    """Standardized predictions (m,) float64 from :func:`encode_split` output (eval mode,
    no grad), by ``forward(model, **batch)`` (default: the module's ``forward_encoded``);
    batches of ``batch`` subjects, at N > 1 ECG tokens of at most :data:`ENCODE_TOKEN_ROWS`
    // N (a fused forward over 512 x 186 tokens holds about 0.5 GB of activations)."""
    n = next(iter(encoded.values())).shape[0]
    ecg = encoded.get("ecg")
    if ecg is not None:
        batch = _token_batch(batch, tuple(ecg.shape))
    was_training = model.training
    model.eval()
    with torch.no_grad():
        out = [forward(model, **part) if forward is not None else model.forward_encoded(**part)
               for part in ({k: t[lo:lo + batch] for k, t in encoded.items()}
                            for lo in range(0, n, batch))]
    model.train(was_training)
    if not out:
        return np.zeros(0)
    return torch.cat(out).to("cpu", torch.float64).numpy()


def count_params(model: nn.Module) -> int:
    """Number of trainable parameters (buffers excluded)."""
    return int(sum(p.numel() for p in model.parameters() if p.requires_grad))


class TorchModel:
    """A trained torch module with the forward it predicts with.

    ``forward`` / ``attend`` are an accelerator's inference forward and its variant with
    attention weights (None: the module's ``forward_encoded`` / ``attend``); ``accelerate``
    says whether the kernel accelerators (oneDNN products) may run while it predicts.
    """

    def __init__(self, module: nn.Module, forward: Forward | None = None,
                 attend: Forward | None = None, device: Any = "cpu",
                 accelerate: bool = True) -> None:
        self.module, self.forward, self.device = module, forward, device
        self.attend = attend if attend is not None else getattr(type(module), "attend", None)
        self.accelerate = accelerate

    @property
    def n_params(self) -> int:
        """Trainable parameter count."""
        return count_params(self.module)

    def predict_z(self, data: SplitData) -> np.ndarray:
        """Standardized LVEF predictions (m,) float64."""
        with accel.use(self.accelerate):
            enc = encode_split(self.module, data, self.device)
            return predict_encoded_z(self.module, enc, self.forward)

    def attention(self, data: SplitData) -> tuple[torch.Tensor, ...] | None:
        """Per-head attention weights of a probe that attends (None otherwise), all rows at
        once in eval mode: see the module's ``attend`` for their shapes."""
        if self.attend is None:
            return None
        self.module.eval()
        with accel.use(self.accelerate), torch.no_grad():
            return self.attend(self.module, **self.module.encode(**data.tensors(self.device)))[1:]

    def save(self, out_dir: str | os.PathLike[str]) -> Path:
        """Write the state dict (CPU tensors) to ``<out_dir>/weights.pt`` atomically."""
        state = {k: v.detach().to("cpu") for k, v in self.module.state_dict().items()}
        path = Path(out_dir) / WEIGHTS
        with atomic_path(path) as tmp:
            torch.save(state, tmp)
        return path

    def load_weights(self, path: Path) -> TorchModel:
        """Load ``path`` (``torch.load(weights_only=True)``) into the module; eval mode."""
        try:
            state = torch.load(path, map_location=self.device, weights_only=True)
            if not isinstance(state, dict):
                raise TypeError(f"holds a {type(state).__name__}, not a state_dict")
            self.module.load_state_dict(state)
        except (RuntimeError, OSError, EOFError, KeyError, ValueError, TypeError,
                pickle.UnpicklingError) as exc:
            msg = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
            raise DataError(f"{path}: cannot load weights ({msg})") from None
        self.module.to(self.device).eval()
        return self
