"""Frozen configs of the ``train`` and ``evaluate`` params blocks.

Parsed once at the CLI edge by :func:`rightsize.params.load_block`; bad values raise a
``ParamsError`` naming the dotted key (``train.fused.epochs: must be >= 1``).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from rightsize.params import require
from rightsize.probe_registry import PROBES, check_probe_list

DEVICES = ("cpu", "cuda", "auto")
# Keys of a probe's block that shape its training, not its model: left out of its
# architecture (:meth:`rightsize.probes.engine.estimator.Estimator.arch`, checkpoints)
SCHEDULE_KEYS = ("epochs", "modality_dropout")


def _epochs(epochs: int, key: str) -> None:
    require(epochs >= 1, f"{key}.epochs", f"must be >= 1, got {epochs}")


def _dropout(p: float, key: str, hi: float = 1.0) -> None:
    require(0.0 <= p < hi, key, f"must be in [0, {hi}), got {p}")


@dataclass(frozen=True)
class EcgConfig:
    """``train.ecg``: ridge (LVEF) and L2 logistic regression (EF<=40) on the ECG vector.

    Each model is fitted for every value of its grid on the train split; the value with
    the lowest validation loss (MSE; log-loss) is kept, like the best epoch of a torch probe.
    """

    alphas: tuple[float, ...] = (1.0, 10.0, 100.0, 1e3, 1e4, 1e5)   # Ridge L2 strengths
    Cs: tuple[float, ...] = (1e-4, 1e-3, 1e-2, 1e-1, 1.0)           # inverse L2 strengths
    max_iter: int = 1000    # logistic regression L-BFGS iterations (rightsize.probes.models.glm)

    def validate(self, key: str) -> None:
        """Check ranges (message names the dotted key)."""
        for name in ("alphas", "Cs"):
            grid = getattr(self, name)
            require(len(grid) >= 1, f"{key}.{name}", "needs at least one value")
            for i, v in enumerate(grid):
                require(v > 0, f"{key}.{name}[{i}]", f"must be > 0, got {v}")
        require(self.max_iter >= 1, f"{key}.max_iter", f"must be >= 1, got {self.max_iter}")


@dataclass(frozen=True)
class EchoConfig:
    """``train.echo``: attentive pooling over echo clips + linear head."""

    epochs: int = 30

    def validate(self, key: str) -> None:
        """Check ranges (message names the dotted key)."""
        _epochs(self.epochs, key)


@dataclass(frozen=True)
class ConcatConfig:
    """``train.concat``: MLP on [mean-pooled echo || ECG]."""

    epochs: int = 40
    hidden: int = 256
    dropout: float = 0.1

    def validate(self, key: str) -> None:
        """Check ranges (message names the dotted key)."""
        _epochs(self.epochs, key)
        require(self.hidden >= 1, f"{key}.hidden", f"must be >= 1, got {self.hidden}")
        _dropout(self.dropout, f"{key}.dropout")


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

    def validate(self, key: str) -> None:
        """Check ranges (message names the dotted key)."""
        _epochs(self.epochs, key)
        require(self.fusion_dim >= 1, f"{key}.fusion_dim", f"must be >= 1, got {self.fusion_dim}")
        require(self.heads >= 1, f"{key}.heads", f"must be >= 1, got {self.heads}")
        require(self.fusion_dim % self.heads == 0, f"{key}.heads",
                f"fusion_dim {self.fusion_dim} is not divisible by heads {self.heads}")
        require(self.hidden >= 1, f"{key}.hidden", f"must be >= 1, got {self.hidden}")
        _dropout(self.dropout, f"{key}.dropout")
        _dropout(self.modality_dropout, f"{key}.modality_dropout", hi=0.5)
        require(self.layers >= 1, f"{key}.layers", f"must be >= 1, got {self.layers}")
        require(self.attn_scale > 0, f"{key}.attn_scale", f"must be > 0, got {self.attn_scale}")


@dataclass(frozen=True)
class TrainConfig:
    """The ``train`` block: shared optimisation settings plus one sub-block per probe."""

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
    ecg: EcgConfig = field(default_factory=EcgConfig)
    echo: EchoConfig = field(default_factory=EchoConfig)
    concat: ConcatConfig = field(default_factory=ConcatConfig)
    fused: FusedConfig = field(default_factory=FusedConfig)

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

    def epochs(self, probe: str) -> int:
        """Epochs of ``probe`` (1 for a closed-form probe, whose block has no epochs)."""
        return int(getattr(getattr(self, probe), "epochs", 1))


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
