"""A fifth probe, written the documented way (docs/probes.md, "Add a probe"): this one file
is a probe's home (its config block, its textbook module and its ``SPEC``), importable
without torch. ``test_probes_add_a_probe.py`` adds it to a scratch copy of the package
as ``rightsize/probes/models/echo_linear.py`` plus its name in ``PROBES`` (two files); the
common suite registers its ``SPEC`` at run time. A linear read of the mean echo clip."""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Any

from rightsize.probes.spec import ProbeSpec, check_epochs, module_names


@dataclass(frozen=True)
class EchoLinearConfig:
    """``train.echo_linear``: a linear map of the mean (normalized) echo clip."""

    epochs: int = 4

    def validate(self, key: str) -> None:
        """Check ranges (message names the dotted key)."""
        check_epochs(self.epochs, key)


SPEC = ProbeSpec("echo_linear", EchoLinearConfig, model=lambda: textbook()["EchoLinearProbe"],
                 uses_ecg=False, ecg_pooling="none")


@functools.cache
def textbook() -> dict[str, type]:
    """The textbook torch class, defined (and torch imported) on first use."""
    import torch
    from torch import nn

    from rightsize.probes.engine.data import Moments
    from rightsize.probes.models.featurenorm import FeatureNorm, masked_mean

    class EchoLinearProbe(nn.Module):
        """LVEF = w . mean of the present clips' normalized echo embeddings + b."""

        def __init__(self, echo_dim: int, ecg_dim: int, pca_rank: int = 0) -> None:
            super().__init__()
            self.norm_echo = FeatureNorm(echo_dim, pca_rank)
            self.head = nn.Linear(echo_dim, 1)

        def set_moments(self, m: Moments) -> None:
            """Load train-split input moments."""
            self.norm_echo.set_moments(m.echo_mean, m.echo_sd, m.echo_basis)

        def encode(self, echo: torch.Tensor, clip_mask: torch.Tensor, ecg: torch.Tensor,
                   has_ecg: torch.Tensor) -> dict[str, torch.Tensor]:
            """The clips' PCA coordinates (the fixed part)."""
            return {"echo": self.norm_echo.coords(echo, clip_mask), "clip_mask": clip_mask}

        def forward_encoded(self, echo: torch.Tensor, clip_mask: torch.Tensor) -> torch.Tensor:
            """(B,) standardized LVEF from :meth:`encode`'s output."""
            return nn.functional.linear(masked_mean(echo, clip_mask),
                                        self.norm_echo.lift(self.head.weight),
                                        self.head.bias).squeeze(-1)

        def forward(self, echo: torch.Tensor, clip_mask: torch.Tensor, ecg: torch.Tensor,
                    has_ecg: torch.Tensor) -> torch.Tensor:
            """(B,) standardized LVEF from raw embeddings."""
            return self.forward_encoded(**self.encode(echo, clip_mask, ecg, has_ecg))

    return module_names({"EchoLinearProbe": EchoLinearProbe})


def __getattr__(name: str) -> Any:
    """The textbook class as a module attribute, built on first use."""
    if name == "EchoLinearProbe":
        return textbook()[name]
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
