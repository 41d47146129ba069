"""Settings of the telemetry cost report: the ``telemetry`` params block and the resolved config.

``params.yaml`` holds one ``telemetry.runs.<name>`` entry per rescued run plus the shared
``telemetry.gap_s``; :class:`TelemetryParams` parses that block (unknown keys are errors naming
the dotted key, e.g. ``telemetry.runs.demo.foo``). The verb merges it with explicit command-line
flags (flags win) into one frozen :class:`CostReportConfig`, which is all the engine ever sees.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from rightsize.params import require


@dataclass(frozen=True)
class ProjectionConfig:
    """Re-cost one epoch for a new dataset size (see :mod:`rightsize.telemetry.projection`).

    ``base_records`` (R0) records became ``base_units`` (U0) loader units; ``records`` (R) is the
    target dataset size in records; ``epochs`` the schedules to cost.
    """

    base_records: int
    base_units: int
    records: int
    epochs: tuple[int, ...] = (1,)


@dataclass(frozen=True)
class CostReportConfig:
    """Everything the cost report needs besides the event files themselves."""

    train_records: int                 # loader units iterated per training epoch (N)
    global_batch: int                  # units per optimizer step, summed over GPUs (B)
    gpus: int = 1
    drop_last: bool = False            # PyTorch DataLoader default: keep the partial batch
    gap_s: float = 600.0               # wall-time deltas >= gap_s are pauses, not steps
    step_tag: str | None = None        # None: the densest scalar tag
    val_tag: str | None = None         # None: detected (regular spacing, "val" in name preferred)
    flops_per_unit: float | None = None
    peak_tflops: float | None = None
    projection: ProjectionConfig | None = None
    best: str = "min"                  # "min" (a loss) or "max" (a score) picks the best epoch
    target_epochs: int | None = None   # ETA: steps and hours left to reach this many epochs

    def validate(self) -> None:
        """Raise ``ParamsError`` naming the flag that is out of range."""
        check_positive_int(self.train_records, "--train-records")
        check_positive_int(self.global_batch, "--global-batch")
        check_positive_int(self.gpus, "--gpus")
        require(self.gap_s > 0, "--gap-s", f"must be > 0, got {self.gap_s}")
        require(self.best in ("min", "max"), "--best", f"must be min or max, got {self.best!r}")
        if (self.flops_per_unit is None) != (self.peak_tflops is None):
            require(False, "--flops-per-unit", "needs --peak-tflops too (and vice versa)")
        if self.flops_per_unit is not None and self.peak_tflops is not None:
            require(self.flops_per_unit > 0, "--flops-per-unit", "must be > 0")
            require(self.peak_tflops > 0, "--peak-tflops", "must be > 0")
        if self.target_epochs is not None:
            check_positive_int(self.target_epochs, "--target-epochs")
        if self.projection is not None:
            check_positive_int(self.projection.base_records, "--base-records")
            check_positive_int(self.projection.base_units, "--base-units")
            check_positive_int(self.projection.records, "--records")
            require(len(self.projection.epochs) > 0, "--epochs", "needs at least one count")
            for e in self.projection.epochs:
                check_positive_int(e, "--epochs")


def check_positive_int(value: int, key: str) -> None:
    """Raise ``ParamsError`` naming ``key`` unless ``value`` is a positive integer."""
    require(isinstance(value, int) and not isinstance(value, bool) and value > 0, key,
            f"must be a positive integer, got {value!r}")


@dataclass(frozen=True)
class RunParams:
    """One ``telemetry.runs.<name>`` entry of ``params.yaml``."""

    train_records: int
    global_batch: int
    gpus: int = 1
    drop_last: bool = False
    base_records: int | None = None
    base_units: int | None = None
    records: int | None = None
    epochs: tuple[int, ...] | None = None
    flops_per_unit: float | None = None
    peak_tflops: float | None = None
    step_tag: str | None = None
    val_tag: str | None = None
    target_epochs: int | None = None

    def validate(self, key: str) -> None:
        """Check ranges and that the projection keys come together."""
        for name in ("train_records", "global_batch", "gpus"):
            v = getattr(self, name)
            require(v > 0, f"{key}.{name}", f"must be > 0, got {v}")
        proj = (self.base_records, self.base_units, self.records)
        given = [v is not None for v in proj]
        require(all(given) or not any(given), f"{key}.base_records",
                "base_records, base_units and records go together")
        for name in ("base_records", "base_units", "records", "flops_per_unit", "peak_tflops"):
            v = getattr(self, name)
            require(v is None or v > 0, f"{key}.{name}", f"must be > 0, got {v}")
        require(self.target_epochs is None or self.target_epochs > 0, f"{key}.target_epochs",
                f"must be > 0, got {self.target_epochs}")
        for i, e in enumerate(self.epochs or ()):
            require(e > 0, f"{key}.epochs[{i}]", f"must be > 0, got {e}")
        require((self.flops_per_unit is None) == (self.peak_tflops is None),
                f"{key}.flops_per_unit", "flops_per_unit and peak_tflops go together")


@dataclass(frozen=True)
class TelemetryParams:
    """The ``telemetry`` block: shared pause threshold and one entry per run."""

    gap_s: float = 600.0
    runs: dict[str, RunParams] = field(default_factory=dict)

    def validate(self, key: str) -> None:
        """Check the pause threshold."""
        require(self.gap_s > 0, f"{key}.gap_s", f"must be > 0, got {self.gap_s}")


def resolve(flags: dict[str, object], run: RunParams | None = None,
            gap_s: float | None = None) -> CostReportConfig:
    """Merge explicit flags (None = not given) over a params entry into a checked config.

    ``flags`` keys are :class:`RunParams` field names plus ``gap_s`` and ``best``.
    """
    from rightsize.errors import InputError

    def pick(name: str, default: object = None) -> object:
        v = flags.get(name)
        if v is not None:
            return v
        if run is not None and name in RunParams.__dataclass_fields__:
            pv = getattr(run, name)
            if pv is not None:
                return pv
        return default

    for name in ("train_records", "global_batch"):
        if pick(name) is None:
            raise InputError(f"--{name.replace('_', '-')} is required "
                             "(or --params params.yaml --run NAME)")
    proj_keys = ("base_records", "base_units", "records")
    proj = [pick(k) for k in proj_keys]
    if any(v is not None for v in proj) and not all(v is not None for v in proj):
        missing = proj_keys[[v is None for v in proj].index(True)]
        raise InputError(f"--{missing.replace('_', '-')} is required with "
                         "--base-records/--base-units/--records")
    epochs = pick("epochs")
    projection = None
    if all(v is not None for v in proj):
        projection = ProjectionConfig(*proj, epochs=tuple(epochs) if epochs else (1,))
    gap = flags.get("gap_s")
    cfg = CostReportConfig(
        train_records=pick("train_records"),
        global_batch=pick("global_batch"),
        gpus=pick("gpus", 1),
        drop_last=bool(pick("drop_last", False)),
        gap_s=float(gap if gap is not None else (gap_s if gap_s is not None else 600.0)),
        step_tag=pick("step_tag"),
        val_tag=pick("val_tag"),
        flops_per_unit=pick("flops_per_unit"),
        peak_tflops=pick("peak_tflops"),
        projection=projection,
        best=str(flags.get("best") or "min"),
        target_epochs=pick("target_epochs"),
    )
    cfg.validate()
    return cfg
