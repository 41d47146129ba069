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

from rightsize.atomic import write_bytes
from rightsize.errors import DataError
from rightsize.probes import accel
from rightsize.probes.engine.data import SplitData

PREDICT_BATCH = 512
ENCODE_TOKEN_ROWS = 8192   # most ECG token rows encoded or predicted at once (N > 1)
WEIGHTS = "weights.safetensors"   # the state_dict as safetensors: no pickle, same bytes for
LEGACY_WEIGHTS = "weights.pt"     # the same tensors; torch.save's zip (read-only, older folders)
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
        """Write the state dict (CPU tensors) to ``<out_dir>/weights.safetensors`` atomically.

        safetensors' bytes depend only on the tensors (names, dtypes, shapes, values), so two
        trainings that end with the same weights write the same file (``torch.save`` embeds
        a temporary file name and a random serialization id).
        """
        from safetensors.torch import save

        state = {k: v.detach().to("cpu").contiguous()
                 for k, v in self.module.state_dict().items()}
        path = Path(out_dir) / WEIGHTS
        write_bytes(path, save(state))
        return path

    def load_weights(self, path: Path) -> TorchModel:
        """Load ``path`` into the module (safetensors; a ``weights.pt`` of an older folder with
        ``torch.load(weights_only=True)``); eval mode. No pickled object is ever built: a
        file that holds one is refused, saying so (never torch's advice to unpickle it)."""
        try:
            state = _read_state(path)
            self.module.load_state_dict(state)
        except pickle.UnpicklingError as exc:
            raise refused(path, exc) from None
        except (RuntimeError, OSError, EOFError, KeyError, ValueError, TypeError) as exc:
            msg = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
            raise DataError(f"{path}: cannot load weights ({msg})") from None
        self.module.to(self.device).eval()
        return self


def refused(path: Path, exc: pickle.UnpicklingError) -> DataError:
    """The error for a ``weights.pt`` that ``torch.load(weights_only=True)`` stopped on: what
    was refused and why, never torch's own text (it advises ``weights_only=False``)."""
    import re

    found = re.search(r"Unsupported global: GLOBAL ([\w.]+)", str(exc))
    if found:
        return DataError(f"{path}: refused: it holds a pickled Python object "
                         f"({found.group(1)}) besides tensors, and rightsize loads no pickled "
                         "code (a checkpoint must be tensors only; retrain the probe)")
    return DataError(f"{path}: refused: not a file of tensors only (torch's restricted "
                     "loader cannot read it, and rightsize loads no pickled code)")


def _read_state(path: Path) -> dict[str, torch.Tensor]:
    """The state_dict in ``path``: a safetensors file, or an older folder's ``weights.pt``."""
    if path.name == LEGACY_WEIGHTS:
        state = torch.load(path, map_location="cpu", weights_only=True)
    else:
        from safetensors import SafetensorError
        from safetensors.torch import load

        try:
            state = load(path.read_bytes())
        except SafetensorError as exc:
            raise ValueError(f"not a safetensors file: {exc}") from None
    if not isinstance(state, dict):
        raise TypeError(f"holds a {type(state).__name__}, not a state_dict")
    return state

