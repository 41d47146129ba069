"""The torch probes' common interface, the echo and concat probes, and the registry.

All take the same batch tensors ``(echo, clip_mask, ecg, has_ecg)`` and return one
standardized LVEF prediction per row. Inputs are normalized inside the model with
train-split moments (buffers, saved in the state dict) and multiplied by their presence
mask, so an absent modality is exactly "zeros + masked tokens" whatever the caller passed.
Every attention has a learned null token that is always attendable, so a row whose key
set is entirely masked (no clips, no ECG) still gets finite weights.

Each forward pass is split in two (:class:`ProbeModule`): ``encode`` applies the fixed
buffers (normalization, PCA projection, presence masks) and ``forward_encoded`` the trained
layers, which read the rank-``pca_rank`` coordinates. The training loop encodes each split
once and batches the small coordinate tensors; ``forward`` = ``forward_encoded(encode(.))``.
A training step is ``loss_backward`` (MSE and every ``.grad``), hand-written for concat
(below) and fused (:mod:`rightsize.probes.fused_step`); autograd is the fallback. The engine
trains the echo probe in numpy (:mod:`rightsize.probes.attentive`); :class:`EchoAttnProbe`
is that model in torch: its test oracle and the calibration workload's echo probe.
:mod:`rightsize.probes.reference` computes the same functions the textbook way (the
tests hold the two to each other, outputs and gradients).

EF<=40 is not a separate head: its score is the negated LVEF prediction (EF<=40 is a
threshold of LVEF, so the regression output ranks it directly; AUROC is rank-based).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch
from torch import nn

from rightsize.probes.config import ARCH_KEYS
from rightsize.probes.data import Moments
from rightsize.probes.featurenorm import FeatureNorm, masked_mean
from rightsize.probes.handgrad import gelu_dropout_linear_mse, grad_buffers

Batch = dict[str, torch.Tensor]
# update(param, grad): a hand-written step hands over a gradient the moment it is final
# (FusedAdamW.update) instead of leaving it in ``.grad``
Update = Callable[[nn.Parameter, torch.Tensor], None]


class ProbeModule(nn.Module):
    """A probe as ``forward_encoded(encode(inputs))``; subclasses define both halves."""

    norm_echo: FeatureNorm

    def encode(self, echo: torch.Tensor, clip_mask: torch.Tensor, ecg: torch.Tensor,
               has_ecg: torch.Tensor) -> Batch:
        """Fixed (untrained) part: masked coordinates under the same four keys."""
        raise NotImplementedError

    def forward_encoded(self, echo: torch.Tensor, clip_mask: torch.Tensor, ecg: torch.Tensor,
                        has_ecg: torch.Tensor) -> torch.Tensor:
        """Trained part on :meth:`encode`'s output (masks may be narrowed afterwards)."""
        raise NotImplementedError

    def forward(self, echo: torch.Tensor, clip_mask: torch.Tensor, ecg: torch.Tensor,
                has_ecg: torch.Tensor) -> torch.Tensor:
        """(B,) standardized LVEF from raw embeddings."""
        return self.forward_encoded(**self.encode(echo, clip_mask, ecg, has_ecg))

    def loss_backward(self, batch: Batch, y: torch.Tensor, update: Update | None = None
                      ) -> torch.Tensor:
        """MSE of :meth:`forward_encoded` on ``batch`` against ``y``; each parameter's
        ``.grad`` replaced by its gradient. Returns the loss without its graph.

        A step that can hand gradients over as they become final (the fused probe's
        hand-written one) calls ``update(param, grad)`` for its weight matrices instead, once
        the rest of the pass no longer reads them, and leaves their ``.grad`` None; every
        other gradient is in ``.grad`` for the caller's optimizer step. Steps that cannot
        ignore ``update``.

        Autograd here: the fallback (the fused probe uses it where its hand-written step
        does not apply); concat and fused override it with hand-written backward passes.
        """
        for p in self.parameters():
            p.grad = None
        loss = nn.functional.mse_loss(self.forward_encoded(**batch), y)
        loss.backward()
        return loss.detach()


class EchoAttnProbe(ProbeModule):
    """Attentive pooling over echo clips (learned query, masked softmax) + linear head."""

    def __init__(self, echo_dim: int, ecg_dim: int, pca_rank: int = 0) -> None:
        super().__init__()
        self.norm_echo = FeatureNorm(echo_dim, pca_rank)
        self.query = nn.Linear(echo_dim, 1)             # score_j = q . x_j + b
        self.null = nn.Parameter(torch.zeros(1, 1, echo_dim))
        self.head = nn.Linear(echo_dim, 1)

    def set_moments(self, m: Moments) -> None:
        """Load train-split input moments."""
        self.norm_echo.set_moments(m.echo_mean, m.echo_sd, m.echo_basis)

    def encode(self, echo: torch.Tensor, clip_mask: torch.Tensor, ecg: torch.Tensor,
               has_ecg: torch.Tensor) -> Batch:
        """Clip coordinates; the ECG is not used (an empty (B, 0) tensor)."""
        return {"echo": self.norm_echo.coords(echo, clip_mask), "clip_mask": clip_mask,
                "ecg": ecg[:, :0], "has_ecg": has_ecg}

    def forward_encoded(self, echo: torch.Tensor, clip_mask: torch.Tensor, ecg: torch.Tensor,
                        has_ecg: torch.Tensor) -> torch.Tensor:
        """``head(w_null null + sum_j w_j x_j)``, ``x_j = B c_j``, all in coordinates."""
        c = echo * clip_mask.unsqueeze(-1).to(echo.dtype)
        lift = self.norm_echo.lift
        null = self.null.view(1, -1)
        s_null = nn.functional.linear(null, self.query.weight, self.query.bias)      # (1, 1)
        s_clip = nn.functional.linear(c, lift(self.query.weight), self.query.bias)   # (B, c, 1)
        score = torch.cat([s_null.expand(c.shape[0], 1), s_clip.squeeze(-1)], dim=1)
        ok = torch.cat([torch.ones_like(clip_mask[:, :1]), clip_mask], dim=1)
        w = torch.softmax(score.masked_fill(~ok, float("-inf")), dim=1)            # (B, 1+c)
        pooled = torch.bmm(w[:, 1:].unsqueeze(1), c).squeeze(1)                      # (B, r)
        h_null = nn.functional.linear(null, self.head.weight)                        # (1, 1)
        out = nn.functional.linear(pooled, lift(self.head.weight), self.head.bias)
        return (out + w[:, :1] * h_null).squeeze(-1)


class ConcatMLPProbe(ProbeModule):
    """MLP on [mean-pooled echo || ECG] (normalized; absent parts are zeros)."""

    def __init__(self, echo_dim: int, ecg_dim: int, hidden: int = 256,
                 dropout: float = 0.1, pca_rank: int = 0) -> None:
        super().__init__()
        self.norm_echo = FeatureNorm(echo_dim, pca_rank)
        self.norm_ecg = FeatureNorm(ecg_dim, pca_rank)
        self.mlp = nn.Sequential(nn.Linear(echo_dim + ecg_dim, hidden), nn.GELU(),
                                 nn.Dropout(dropout), nn.Linear(hidden, 1))

    def set_moments(self, m: Moments) -> None:
        """Load train-split input moments."""
        self.norm_echo.set_moments(m.echo_mean, m.echo_sd, m.echo_basis)
        self.norm_ecg.set_moments(m.ecg_mean, m.ecg_sd, m.ecg_basis)

    def encode(self, echo: torch.Tensor, clip_mask: torch.Tensor, ecg: torch.Tensor,
               has_ecg: torch.Tensor) -> Batch:
        """Echo clips mean-pooled in coordinates into one pseudo-clip (B, 1, r).

        Pooling commutes with the (linear) normalization and first layer, so the echo
        part of the input shrinks from ``c`` clips to one before any batch is drawn.
        """
        c = self.norm_echo.coords(echo, clip_mask)
        return {"echo": masked_mean(c, clip_mask).unsqueeze(1),
                "clip_mask": clip_mask.any(dim=1, keepdim=True),
                "ecg": self.norm_ecg.coords(ecg, has_ecg), "has_ecg": has_ecg}

    def forward_encoded(self, echo: torch.Tensor, clip_mask: torch.Tensor, ecg: torch.Tensor,
                        has_ecg: torch.Tensor) -> torch.Tensor:
        """First layer split by input block and applied in the low-rank coordinates."""
        return self.mlp[1:](self._first_layer(echo, clip_mask, ecg, has_ecg)[2]).squeeze(-1)

    def _first_layer(self, echo: torch.Tensor, clip_mask: torch.Tensor, ecg: torch.Tensor,
                     has_ecg: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """``(x_e, x_g, h)``: the pooled echo and masked ECG coordinates and the first layer."""
        first = self.mlp[0]
        de = self.norm_echo.mean.shape[0]
        x_e = masked_mean(echo, clip_mask)
        x_g = ecg * has_ecg.unsqueeze(-1).to(ecg.dtype)
        h = (nn.functional.linear(x_e, self.norm_echo.lift(first.weight[:, :de]))
             + nn.functional.linear(x_g, self.norm_ecg.lift(first.weight[:, de:]), first.bias))
        return x_e, x_g, h

    def loss_backward(self, batch: Batch, y: torch.Tensor, update: Update | None = None
                      ) -> torch.Tensor:
        """:meth:`ProbeModule.loss_backward` by hand: the first layer's gradient is written
        block by block (``dA B^T`` per input) straight into its ``.grad``. ``update`` is not
        used: this model's parameters are small enough for one optimizer step after the pass."""
        de = self.norm_echo.mean.shape[0]
        grads = grad_buffers(self)
        with torch.no_grad():
            x_e, x_g, h = self._first_layer(**batch)
            loss, d_h = gelu_dropout_linear_mse(h, self.mlp[2], self.mlp[3], y,
                                                grads["mlp.3.weight"], grads["mlp.3.bias"])
            torch.sum(d_h, 0, out=grads["mlp.0.bias"])
            g_w = grads["mlp.0.weight"]
            for norm, x, cols in ((self.norm_echo, x_e, g_w[:, :de]),
                                  (self.norm_ecg, x_g, g_w[:, de:])):
                norm.unlift(d_h.t() @ x, out=cols)
            return loss


def build_model(arch: dict[str, Any]) -> ProbeModule:
    """Instantiate the torch probe described by ``arch`` (see :func:`arch_of`)."""
    from rightsize.probes.fused import CrossAttnFusedProbe

    probe = arch["probe"]
    kwargs = {k: arch[k] for k in ARCH_KEYS[probe] if k in arch}
    cls = {"echo": EchoAttnProbe, "concat": ConcatMLPProbe, "fused": CrossAttnFusedProbe}[probe]
    return cls(**kwargs)


def count_params(model: nn.Module) -> int:
    """Number of trainable parameters (buffers excluded)."""
    return int(sum(p.numel() for p in model.parameters() if p.requires_grad))
