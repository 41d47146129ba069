"""The ``echo`` probe: attentive pooling over echo clips and a linear head.

The textbook forward: the clips are normalized and projected on the train split's
principal directions (:meth:`.model.EchoAttnProbe.encode`, the fixed part) and reconstructed in
embedding space; a learned query scores a learned null token and every present clip; a
softmax over them pools the tokens; a linear head reads the pooled vector. The probe reads
no ECG. 3,074 parameters at echo_dim 1024: the accelerator ``echo_numpy``
(:mod:`rightsize.probes.models.echo.numpy_model`) trains and runs it in numpy, without torch;
the tests hold it to this forward.

This home (config, spec) imports without torch; the textbook torch class is in
:mod:`rightsize.probes.models.echo.model`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from rightsize.probes.spec import ProbeSpec, check_epochs

if TYPE_CHECKING:
    from rightsize.probes.accel import Accelerator


@dataclass(frozen=True)
class EchoConfig:
    """``train.echo``: attentive pooling over echo clips + linear head."""

    epochs: int = 30

    def validate(self, key: str) -> None:
        """Check ranges (message names the dotted key)."""
        check_epochs(self.epochs, key)


def _numpy_model() -> type:
    from rightsize.probes.models.echo.numpy_model import AttentiveEchoProbe
    return AttentiveEchoProbe


def _echo_numpy() -> Accelerator:
    from rightsize.probes.models.echo.numpy_model import ACCELERATOR
    return ACCELERATOR


def _model() -> type:
    from rightsize.probes.models.echo.model import EchoAttnProbe
    return EchoAttnProbe


SPEC = ProbeSpec("echo", EchoConfig, model=_model,
                 numpy_model=_numpy_model, accelerators=(_echo_numpy,), uses_ecg=False,
                 ecg_pooling="none")
