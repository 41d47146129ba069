"""Frozen configs of the ``train`` and ``evaluate`` params blocks.

Parsed once at the CLI edge by :func:`rightsize.params.load_block`; bad values raise a
``ParamsError`` naming the dotted key (``train.fused.epochs: must be >= 1``).
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields, make_dataclass
from typing import Any

from rightsize.cohort.token_layout import crops
from rightsize.params import require
from rightsize.probe_names import PROBES, check_probe_list
from rightsize.probes.models.concat import ConcatConfig
from rightsize.probes.models.ecg import EcgConfig
from rightsize.probes.models.echo import EchoConfig
from rightsize.probes.models.fused import FusedConfig
from rightsize.probes.registry import SPECS, spec

DEVICES = ("cpu", "cuda", "auto")
# Keys of a probe's block that shape its training, not its model: left out of its
# architecture (:meth:`rightsize.probes.engine.estimator.Estimator.arch`, checkpoints)
SCHEDULE_KEYS = ("epochs", "epochs_per_crop", "batch_per_crop", "modality_dropout")
# Keys of a probe's block resolved before the model is built (``train.fused.tokens``: the
# overrides at N > 1 ECG tokens), also left out of its architecture
INPUT_OVERRIDES = ("tokens",)


@dataclass(frozen=True)
class TrainSettings:
    """The ``train`` block's shared optimisation settings (:class:`TrainConfig` adds one
    sub-block per registered probe)."""

    probes: tuple[str, ...] = PROBES
    telemetry_probes: tuple[str, ...] | None = None   # probe_telemetry@<probe>, within probes
    seed: int = 0
    seeds: int = 5          # replicas per probe, seeds seed ... seed + seeds - 1
    threads: int = 1
    device: str = "cpu"
    batch_size: int = 64
    lr: float = 1e-3
    weight_decay: float = 1e-4
    pca_rank: int = 32      # torch probes: keep the top-k train principal directions; 0 = all
    accelerate: bool = True  # use the accelerators (rightsize.probes.accel) where they apply

    def validate(self, key: str) -> None:
        """Check ranges (message names the dotted key)."""
        check_probe_list(self.probes, f"{key}.probes", PROBES)
        if self.telemetry_probes is not None:
            check_probe_list(self.telemetry_probes, f"{key}.telemetry_probes", self.probes,
                             within=f"{key}.probes")
        require(self.seeds >= 1, f"{key}.seeds", f"must be an integer >= 1, got {self.seeds}")
        require(self.threads >= 1, f"{key}.threads", f"must be >= 1, got {self.threads}")
        require(self.device in DEVICES, f"{key}.device",
                f"must be one of {', '.join(DEVICES)}, got {self.device!r}")
        require(self.batch_size >= 1, f"{key}.batch_size", f"must be >= 1, got {self.batch_size}")
        require(self.lr > 0, f"{key}.lr", f"must be > 0, got {self.lr}")
        require(self.pca_rank >= 0, f"{key}.pca_rank", f"must be >= 0, got {self.pca_rank}")
        require(self.weight_decay >= 0, f"{key}.weight_decay",
                f"must be >= 0, got {self.weight_decay}")

    def block(self, probe: str, ecg_tokens: int = 1) -> Any:
        """``train.<probe>`` as it trains on ``ecg_tokens`` ECG tokens per subject
        (:meth:`rightsize.probes.spec.ProbeSpec.block`)."""
        return spec(probe).block(self, ecg_tokens)

    def epochs(self, probe: str, ecg_tokens: int = 1) -> int:
        """Epochs of ``probe`` at ``ecg_tokens`` tokens (1 for a closed-form probe, whose block
        has no epochs)."""
        return int(getattr(self.block(probe, ecg_tokens), "epochs", 1))

    def batch(self, probe: str, ecg_tokens: int = 1) -> int:
        """Subjects per step of ``probe`` at ``ecg_tokens`` tokens: ``batch_size``, times the
        record's 5-s crops where the probe's block sets ``batch_per_crop`` (HuBERT-ECG's
        layout; x 1 at a count that is not whole crops)."""
        if not getattr(self.block(probe, ecg_tokens), "batch_per_crop", False):
            return self.batch_size
        return self.batch_size * max(1, crops(ecg_tokens))


@dataclass(frozen=True)
class TrainConfig(TrainSettings):
    """The ``train`` block: the shared settings plus ``train.<probe>``, one sub-block per
    built-in probe (its home's config dataclass, ``SPEC.config``), in registry order."""

    ecg: EcgConfig = field(default_factory=EcgConfig)
    echo: EchoConfig = field(default_factory=EchoConfig)
    concat: ConcatConfig = field(default_factory=ConcatConfig)
    fused: FusedConfig = field(default_factory=FusedConfig)


# A probe added by its home and its name in PROBES alone (docs/probes.md, "Add a probe") gets
# its ``train.<name>`` block here, until a line above names it.
_ADDED = [(name, s.config, field(default_factory=s.config)) for name, s in SPECS.items()
          if name not in {f.name for f in fields(TrainConfig)}]
if _ADDED:
    TrainConfig = make_dataclass(  # type: ignore[misc]
        "TrainConfig", _ADDED, bases=(TrainConfig,), frozen=True,
        namespace={"__doc__": TrainConfig.__doc__, "__module__": __name__})


@dataclass(frozen=True)
class EvaluateConfig:
    """The ``evaluate`` block: bootstrap settings for evaluate and missing-modality."""

    seed: int = 0
    n_bootstrap: int = 2000
    n_bootstrap_missing: int = 1000
    ci: float = 0.95

    def validate(self, key: str) -> None:
        """Check ranges (message names the dotted key)."""
        require(self.n_bootstrap >= 1, f"{key}.n_bootstrap",
                f"must be >= 1, got {self.n_bootstrap}")
        require(self.n_bootstrap_missing >= 1, f"{key}.n_bootstrap_missing",
                f"must be >= 1, got {self.n_bootstrap_missing}")
        require(0.0 < self.ci < 1.0, f"{key}.ci", f"must be in (0, 1), got {self.ci}")
