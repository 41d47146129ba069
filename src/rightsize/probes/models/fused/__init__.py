"""The ``fused`` probe: bidirectional cross-attention between echo clips and ECG tokens.

The textbook forward (:meth:`.model.CrossAttnFusedProbe.attend`), on the PCA coordinates of the
inputs (:meth:`~CrossAttnFusedProbe.encode`; each first projection is applied to the PCA
reconstruction, ``W (B c) = (W B) c``):

1. project the echo clips to ``e`` (B, c, d) and the subject's ECG tokens to ``g``
   (B, N, d); a pooled ECG is one token (N = 1). With ``train.fused.lead_mix`` β > 0, at
   HuBERT-ECG's layout (N = 93 k tokens), each ECG token first gets β x the mean of the 12
   tokens that see the same moment, one per lead (a fixed mix in PCA coordinates, part of
   :meth:`~CrossAttnFusedProbe.encode`; other N have no leads and are left as they are);
2. each :class:`FusionBlock` (``train.fused.layers``, default 1):

   * **echo -> ECG**: every clip queries ``[null, g_1 ... g_N]`` (standard multi-head
     attention, :class:`CrossAttention`; an absent ECG leaves only the null key);
     residual + LayerNorm;
   * **ECG -> echo**: one query, the mean of the ECG tokens, attends over
     ``[null, clips]`` (absent clips masked); residual + LayerNorm. One query whatever N,
     so this direction's cost does not grow with the number of ECG tokens;

3. the echo tokens are mean-pooled over present clips; ``[pooled echo || ECG query]``
   feeds an MLP head (Linear, GELU, Dropout, Linear) to the standardized LVEF.

Every attention has a learned null token that is always attendable, so a row without
clips or without an ECG still gets finite weights. The accelerators ``fused_pooled`` (one
ECG token: each clip attends over two keys ``[null, ECG]``) and ``fused_tokens`` (N tokens)
compute one block of this forward in PCA coordinates (:mod:`rightsize.probes.models.fused.coords`);
the tests hold them to this forward.

This home (config, spec) imports without torch; the textbook torch classes are in
:mod:`rightsize.probes.models.fused.model`.
"""

from __future__ import annotations

from dataclasses import dataclass, fields, replace
from typing import TYPE_CHECKING, Any

from rightsize.cohort.token_layout import crops
from rightsize.params import parse, require
from rightsize.probes.spec import ProbeSpec, check_dropout, check_epochs

if TYPE_CHECKING:
    from rightsize.probes.accel import Accelerator


@dataclass(frozen=True)
class FusedConfig:
    """``train.fused``: CrossAttnFusedProbe (bidirectional cross-attention, MLP head)."""

    epochs: int = 50
    fusion_dim: int = 256
    heads: int = 4
    hidden: int = 256
    dropout: float = 0.1
    modality_dropout: float = 0.1   # per-row chance of hiding echo (and, separately, ECG)
    layers: int = 1         # fusion blocks (cross-attention both ways), stacked
    attn_scale: float = 1.0  # echo->ECG score multiplier (x 1/sqrt(head dim)): a sharper softmax
    lead_mix: float = 0.0   # HuBERT-ECG layout: + this x the same moment's mean over the 12 leads
    epochs_per_crop: bool = False   # HuBERT-ECG layout: epochs x the record's 5-s crops
    batch_per_crop: bool = False    # HuBERT-ECG layout: train.batch_size x the record's 5-s crops
    tokens: dict[str, Any] | None = None   # this block's keys overridden at N > 1 ECG tokens

    def for_ecg_tokens(self, n_tokens: int) -> FusedConfig:
        """The block that trains on ``n_tokens`` ECG tokens per subject: ``tokens``'
        overrides where ``n_tokens > 1``, this block as it is on a pooled ECG; ``tokens``
        itself resolved away (None). With ``epochs_per_crop``, ``epochs`` counts per 5-s
        crop of HuBERT-ECG's layout (x 2 at 186 tokens; x 1 at a count that is not whole
        crops), resolved into ``epochs`` (the flag then off: resolving twice is resolving
        once)."""
        over = self.tokens if n_tokens > 1 and self.tokens else {}
        block = replace(self, **over, tokens=None)
        if block.epochs_per_crop:
            block = replace(block, epochs=block.epochs * max(1, crops(n_tokens)),
                            epochs_per_crop=False)
        return block

    def validate(self, key: str) -> None:
        """Check ranges (message names the dotted key)."""
        if self.tokens is not None:
            mine = {f.name: getattr(self, f.name) for f in fields(self) if f.name != "tokens"}
            require("tokens" not in self.tokens, f"{key}.tokens.tokens", "cannot be nested")
            parse(FusedConfig, {**mine, **self.tokens}, f"{key}.tokens")
        check_epochs(self.epochs, key)
        require(self.fusion_dim >= 1, f"{key}.fusion_dim", f"must be >= 1, got {self.fusion_dim}")
        require(self.heads >= 1, f"{key}.heads", f"must be >= 1, got {self.heads}")
        require(self.fusion_dim % self.heads == 0, f"{key}.heads",
                f"fusion_dim {self.fusion_dim} is not divisible by heads {self.heads}")
        require(self.hidden >= 1, f"{key}.hidden", f"must be >= 1, got {self.hidden}")
        check_dropout(self.dropout, f"{key}.dropout")
        check_dropout(self.modality_dropout, f"{key}.modality_dropout", hi=0.5)
        require(self.layers >= 1, f"{key}.layers", f"must be >= 1, got {self.layers}")
        require(self.attn_scale > 0, f"{key}.attn_scale", f"must be > 0, got {self.attn_scale}")
        require(self.lead_mix >= 0, f"{key}.lead_mix", f"must be >= 0, got {self.lead_mix}")


def _fused_pooled() -> Accelerator:
    from rightsize.probes.models.fused.step import POOLED
    return POOLED


def _fused_tokens() -> Accelerator:
    from rightsize.probes.models.fused.step import TOKENS
    return TOKENS


def _model() -> type:
    from rightsize.probes.models.fused.model import CrossAttnFusedProbe
    return CrossAttnFusedProbe


SPEC = ProbeSpec("fused", FusedConfig, model=_model,
                 accelerators=(_fused_pooled, _fused_tokens),
                 ecg_pooling="attention (echo->ECG); mean (ECG->echo query)")
