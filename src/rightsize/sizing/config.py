"""The ``encoder_bench`` and ``sizing`` params blocks as frozen dataclasses, checked once.

``encoder_bench.models.<name>`` picks an encoder family and size, its input geometry and
how to time it; ``sizing`` says which scenarios to size (every count with its source),
what is kept per record, the deadline, the GPUs, the GPU assumed for an estimate when no
GPU file exists, the disk whose write rate is measured, and optional prices. Retired keys
(the asserted calculator's ``tokens_per_second`` ..., the unsourced ``expansion`` and
``full_corpus`` scenarios) are errors that say what replaced them.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

from rightsize.errors import ParamsError
from rightsize.params import require, require_one_of
from rightsize.sizing.units import DTYPE_BYTES

COMPUTE_DTYPES = ("auto", "float32", "bfloat16", "float16")
KEEP = ("tokens", "pooled")
SHARD_FORMATS = ("npy", "parquet")
PAIRED = "paired_cohort"

#: Keys of the retired asserted-rate calculator -> what measures or replaces them now.
RETIRED_KEYS: dict[str, str] = {
    "tokens_per_second": "tokens per record are measured from the encoder's output shapes "
                         "(encoder_bench stage -> metrics/encoders/<model>.json)",
    "records_per_s_per_gpu": "throughput is measured by `rightsize bench-encoder --device cuda` "
                             "(a committed GPU file), else estimated from measured FLOPs at "
                             "sizing.estimate.utilisation",
    "seconds_per_record": "the record geometry is encoder_bench.models.<model> "
                          "(crops_per_record x 5 s crops, clips_per_record clips)",
    "hidden_dim": "the hidden width comes from encoder_bench.models.<model>.size",
    "layers_kept": "use sizing.models.<model>.layers_kept",
    "records": "records come from the manifest (paired_cohort) and sizing.scenarios",
    "disk_bytes": "use sizing.disk.quota (free space is measured at sizing.disk.path)",
}
#: Scenarios whose counts had no source -> the sourced scenarios that replaced them.
RETIRED_SCENARIOS: dict[str, str] = {
    "expansion": "its 12,000 ECG / 96,000 echo records had no source; use "
                 "sizing.scenarios.recovered_cohort (4,103 subjects with both modalities)",
    "full_corpus": "its 1,000,000 ECG / 8,000,000 echo records had no source; use "
                   "sizing.scenarios.ecg_corpus (MIMIC-IV-ECG) and echo_corpus (MIMIC-IV-ECHO)",
}


def check_retired(block: dict, key: str = "sizing") -> None:
    """Raise ``ParamsError`` for the first retired key in ``block``, saying what replaced it.

    Also catches a scenario count written the old way (a bare number): a count without a
    source is an error naming its ``source`` key.
    """
    for name, instead in RETIRED_KEYS.items():
        if name in block:
            raise ParamsError(f"{key}.{name}: retired (it was an asserted figure); {instead}")
    estimate = block.get("estimate")
    if isinstance(estimate, dict) and "peak_tflops" in estimate:
        raise ParamsError(f"{key}.estimate.peak_tflops: retired (a free-text peak); the peak "
                          f"comes from the preset named by {key}.estimate.gpu "
                          f"(rightsize.sizing.gpu_types: A100 SXM, H100 SXM, L40S, L4)")
    scenarios = block.get("scenarios")
    if not isinstance(scenarios, dict):
        return
    for name, instead in RETIRED_SCENARIOS.items():
        if name in scenarios:
            raise ParamsError(f"{key}.scenarios.{name}: retired; {instead}")
    for name, counts in scenarios.items():
        for model, value in (counts.items() if isinstance(counts, dict) else ()):
            if isinstance(value, int | float) and not isinstance(value, bool):
                raise ParamsError(f"{key}.scenarios.{name}.{model}.source: missing (a count "
                                  f"needs its source: {{records: {value}, source: '...'}})")


def _positive_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value > 0


#: Geometry keys of each encoder family (``None`` in params = the family's default).
GEOMETRY_KEYS: dict[str, tuple[str, ...]] = {
    "hubert_ecg": ("crops_per_record",),
    "echojepa": ("clips_per_record", "frames", "resolution"),
}


@dataclass(frozen=True)
class EncoderModelConfig:
    """One encoder to benchmark (``encoder_bench.models.<name>``).

    ``batch_sizes`` count model inputs (ECG crops, echo clips), timed in ascending order;
    ``cpu_timing_layers`` times a truncated model of that depth on CPU (same input shape
    and width) and scales the time by the FLOP ratio to the full depth; ``null`` times the
    full model. ``preprocess_records`` ECG files are written and preprocessed, or echo
    DICOM videos written and decoded (0 = skip). ``worker_threads`` (ECG only; null = skip)
    times extract's workers as its default starts them, one per that many cores: each
    worker's start-up (spawn, imports, model build) and its records/s beside its siblings
    (:mod:`rightsize.sizing.worker_bench`).
    The geometry keys belong to one family each (:data:`GEOMETRY_KEYS`); unset, they take
    the family's default (:class:`~rightsize.encoders.models.EcgGeometry`: one 5 s crop;
    :class:`~rightsize.encoders.models.VideoGeometry`: EchoJEPA's 224 px, 16 frames, two
    clips per video).
    """

    family: str
    size: str
    batch_sizes: tuple[int, ...]
    crops_per_record: int | None = None
    clips_per_record: int | None = None
    frames: int | None = None
    resolution: int | None = None
    cpu_timing_layers: int | None = None
    preprocess_records: int = 0
    worker_threads: int | None = None     # time extract's workers: one per this many cores

    def validate(self, key: str) -> None:
        """Raise ``ParamsError`` naming ``<key>.<field>`` for a bad value."""
        from rightsize.encoders.models import check_family_size

        check_family_size(self.family, self.size, key)
        require(bool(self.batch_sizes) and all(_positive_int(b) for b in self.batch_sizes),
                f"{key}.batch_sizes", f"must be positive integers, got {list(self.batch_sizes)}")
        own = GEOMETRY_KEYS[self.family]
        for name in (n for keys in GEOMETRY_KEYS.values() for n in keys):
            value = getattr(self, name)
            if value is None:
                continue
            require(name in own, f"{key}.{name}",
                    f"does not apply to {self.family} (its geometry keys: {', '.join(own)})")
            require(_positive_int(value), f"{key}.{name}",
                    f"must be a positive integer, got {value!r}")
        if self.cpu_timing_layers is not None:
            require(_positive_int(self.cpu_timing_layers), f"{key}.cpu_timing_layers",
                    f"must be a positive integer or null, got {self.cpu_timing_layers!r}")
        require(isinstance(self.preprocess_records, int) and self.preprocess_records >= 0,
                f"{key}.preprocess_records", f"must be >= 0, got {self.preprocess_records!r}")
        if self.worker_threads is not None:
            require(_positive_int(self.worker_threads), f"{key}.worker_threads",
                    f"must be a positive integer or null, got {self.worker_threads!r}")
            require(self.family == "hubert_ecg", f"{key}.worker_threads",
                    f"applies to hubert_ecg (what extract runs), not {self.family}")

    def geometry(self) -> Any:
        """The model input geometry: the family's defaults with the keys set here."""
        from rightsize.encoders.models import EcgGeometry, VideoGeometry

        cls = EcgGeometry if self.family == "hubert_ecg" else VideoGeometry
        return cls(**{n: getattr(self, n) for n in GEOMETRY_KEYS[self.family]
                      if getattr(self, n) is not None})


@dataclass(frozen=True)
class EncoderBenchConfig:
    """The ``encoder_bench`` block: models plus how every model is timed."""

    models: dict[str, EncoderModelConfig]
    device: str = "cpu"
    repeats: int = 3
    warmup: int = 1
    threads: int = 0
    compute_dtype: str = "auto"       # auto: what extract computes in here (compute_dtype.py)

    def validate(self, key: str = "encoder_bench") -> None:
        """Raise ``ParamsError`` naming ``<key>.<field>`` for a bad value."""
        require(bool(self.models), f"{key}.models", "must name at least one encoder")
        require(self.device == "cpu" or self.device.startswith("cuda"), f"{key}.device",
                f"must be cpu or cuda[:N], got {self.device!r}")
        require(_positive_int(self.repeats) and self.repeats >= 3, f"{key}.repeats",
                f"must be an integer >= 3 (median and spread), got {self.repeats!r}")
        require(isinstance(self.warmup, int) and self.warmup >= 0, f"{key}.warmup",
                f"must be >= 0, got {self.warmup!r}")
        require(isinstance(self.threads, int) and self.threads >= 0, f"{key}.threads",
                f"must be >= 0 (0 = all cores), got {self.threads!r}")
        require_one_of(self.compute_dtype, COMPUTE_DTYPES, f"{key}.compute_dtype", "dtype")


@dataclass(frozen=True)
class ModelSizing:
    """What one model keeps per record (``sizing.models.<name>``): layers and tokens/pooled."""

    layers_kept: int
    keep: str = "tokens"

    def validate(self, key: str) -> None:
        """Raise ``ParamsError`` naming ``<key>.<field>`` for a bad value."""
        require(_positive_int(self.layers_kept), f"{key}.layers_kept",
                f"must be a positive integer, got {self.layers_kept!r}")
        require_one_of(self.keep, KEEP, f"{key}.keep", "choice")


@dataclass(frozen=True)
class GpuEstimate:
    """The GPU assumed when no GPU measurement exists: a preset type and a utilisation range.

    ``gpu`` names a preset of :data:`~rightsize.sizing.gpu_types.GPU_TYPES`; its published
    dense bf16 peak is the preset's, never free text.
    """

    gpu: str
    utilisation: tuple[float, float]

    def validate(self, key: str) -> None:
        """Raise ``ParamsError`` naming ``<key>.<field>`` for a bad value."""
        from rightsize.sizing.gpu_types import GPU_TYPES

        require_one_of(self.gpu, list(GPU_TYPES), f"{key}.gpu", "GPU type")
        lo_hi = self.utilisation
        require(len(lo_hi) == 2 and 0 < lo_hi[0] <= lo_hi[1] <= 1, f"{key}.utilisation",
                f"must be [low, high] with 0 < low <= high <= 1, got {list(lo_hi)}")

    @property
    def peak_tflops(self) -> float:
        """The preset's published dense bf16 tensor-core peak."""
        from rightsize.sizing.gpu_types import GPU_TYPES

        return GPU_TYPES[self.gpu].bf16_dense_tflops


@dataclass(frozen=True)
class DiskConfig:
    """Where the shards go: free space and the write rate are measured at ``path``.

    ``write_mb`` MB of float16 token shards of ``shard_mb`` MB each are written there in
    ``format`` (npy | parquet) and fsync'd, then ``read_files`` record-sized input files are
    written, dropped from the page cache and read back; all of it in a temporary folder
    under ``path``, removed afterwards.
    """

    path: str
    quota: Any = None                # "2TB", "500GiB" or a number of bytes; null = none
    write_mb: int = 256
    shard_mb: int = 64
    format: str = "npy"
    read_files: int = 200

    def validate(self, key: str) -> None:
        """Raise ``ParamsError`` naming ``<key>.<field>`` for a bad value."""
        for name in ("write_mb", "shard_mb", "read_files"):
            require(_positive_int(getattr(self, name)), f"{key}.{name}",
                    f"must be a positive integer, got {getattr(self, name)!r}")
        require(self.shard_mb <= self.write_mb, f"{key}.shard_mb",
                f"must be <= write_mb ({self.write_mb}), got {self.shard_mb}")
        if self.quota is not None:
            from rightsize.sizing.units import parse_size

            require(isinstance(self.quota, str | int | float), f"{key}.quota",
                    f"expected a size such as 2TB, 500GiB or a number of bytes, got "
                    f"{self.quota!r}")
            parse_size(self.quota, f"{key}.quota")
        require_one_of(self.format, SHARD_FORMATS, f"{key}.format", "shard format")


@dataclass(frozen=True)
class ScenarioCount:
    """Records of one model in one scenario, where that count comes from, and the
    assumption it rests on when it is not a plain count (said beside the row)."""

    records: int
    source: str
    assumption: str | None = None
    crops_per_record: int | None = None   # ECG only: size 5-s crops per record other than
    #                                       the bench's (2 = the whole 10 s), scaled from it

    def validate(self, key: str) -> None:
        """Raise ``ParamsError`` naming ``<key>.<field>`` for a bad value."""
        require(_positive_int(self.records), f"{key}.records",
                f"must be a positive integer, got {self.records!r}")
        require(self.crops_per_record is None or _positive_int(self.crops_per_record),
                f"{key}.crops_per_record",
                f"must be a positive integer or null, got {self.crops_per_record!r}")
        require(bool(self.source.strip()), f"{key}.source",
                "must cite where the count comes from, got an empty string")


@dataclass(frozen=True)
class Prices:
    """The user's prices (any currency), ``null`` = not set: money is shown only when set.

    ``gpu_hour`` is one price for any GPU, or a price per GPU type
    (``{H100 SXM: 4.0, L4: 0.8}``; a type left out has no money shown).
    """

    gpu_hour: Any = None          # a number, a {GPU type: price} mapping, or null
    cpu_core_hour: float | None = None

    def validate(self, key: str) -> None:
        """Raise ``ParamsError`` naming ``<key>.<field>`` for a bad value."""
        from rightsize.sizing.gpu_types import GPU_TYPES

        def ok(v: object) -> bool:
            return v is None or (isinstance(v, int | float) and not isinstance(v, bool)
                                 and math.isfinite(v) and v >= 0)

        if isinstance(self.gpu_hour, dict):
            for name, value in self.gpu_hour.items():
                require_one_of(name, list(GPU_TYPES), f"{key}.gpu_hour", "GPU type")
                require(ok(value), f"{key}.gpu_hour.{name}",
                        f"must be >= 0 or null, got {value!r}")
        else:
            require(ok(self.gpu_hour), f"{key}.gpu_hour",
                    f"must be >= 0, null or a price per GPU type, got {self.gpu_hour!r}")
        require(ok(self.cpu_core_hour), f"{key}.cpu_core_hour",
                f"must be >= 0 or null, got {self.cpu_core_hour!r}")

    def gpu_hour_for(self, gpu_type: str) -> float | None:
        """The price of one GPU-hour of ``gpu_type`` (``None``: not set)."""
        if isinstance(self.gpu_hour, dict):
            return self.gpu_hour.get(gpu_type)
        return self.gpu_hour

    @property
    def any_set(self) -> bool:
        """Whether the user set at least one price."""
        gpu = (any(v is not None for v in self.gpu_hour.values())
               if isinstance(self.gpu_hour, dict) else self.gpu_hour is not None)
        return gpu or self.cpu_core_hour is not None


@dataclass(frozen=True)
class AskConfig:
    """Which scenario and models the report's one-line ask adds up."""

    scenario: str
    models: tuple[str, ...]


@dataclass(frozen=True)
class SizingConfig:
    """The ``sizing`` block: sourced scenarios x models sized from measured bench files."""

    models: dict[str, ModelSizing]
    dtype: str
    scenarios: dict[str, dict[str, ScenarioCount]]
    ask: AskConfig
    estimate: GpuEstimate
    disk: DiskConfig
    deadline_h: float = 24.0
    prices: Prices = field(default_factory=Prices)
    gpus: int = 8
    cpu_cores_per_gpu: int = 8
    gpu: str | None = None
    margin: float = 1.5
    gpu_types: tuple[str, ...] = ("A100 SXM", "H100 SXM", "L40S", "L4")

    def validate(self, key: str = "sizing") -> None:
        """Raise ``ParamsError`` naming ``<key>.<field>`` for a bad value."""
        require(bool(self.models), f"{key}.models", "must name at least one model")
        require_one_of(self.dtype, sorted(DTYPE_BYTES), f"{key}.dtype", "dtype")
        require(PAIRED not in self.scenarios, f"{key}.scenarios.{PAIRED}",
                "is measured from the manifest; do not set it")
        for name, counts in self.scenarios.items():
            require(bool(counts), f"{key}.scenarios.{name}", "must give at least one model")
            for model in counts:
                require(model in self.models, f"{key}.scenarios.{name}.{model}",
                        f"unknown model (known: {', '.join(self.models)})")
        require_one_of(self.ask.scenario, [PAIRED, *self.scenarios], f"{key}.ask.scenario",
                       "scenario")
        require(bool(self.ask.models), f"{key}.ask.models", "must name at least one model")
        for m in self.ask.models:
            require_one_of(m, list(self.models), f"{key}.ask.models", "model")
        twice = sorted({m for m in self.ask.models if self.ask.models.count(m) > 1})
        require(not twice, f"{key}.ask.models",
                f"names {', '.join(twice)} more than once (each model is added up once)")
        counts = self.scenarios.get(self.ask.scenario)
        if counts is not None:
            missing = [m for m in self.ask.models if m not in counts]
            require(not missing, f"{key}.ask.models",
                    f"{', '.join(missing)} has no count in scenario {self.ask.scenario} "
                    f"({key}.scenarios.{self.ask.scenario} counts {', '.join(counts)}): add "
                    f"its count there or leave it out of the ask")
        require(math.isfinite(self.deadline_h) and self.deadline_h > 0, f"{key}.deadline_h",
                f"must be a positive number of hours, got {self.deadline_h!r}")
        require(isinstance(self.margin, int | float) and math.isfinite(self.margin)
                and self.margin >= 1, f"{key}.margin",
                f"must be a number >= 1 (the deadline is met with this margin), "
                f"got {self.margin!r}")
        from rightsize.sizing.gpu_types import GPU_TYPES

        for name in self.gpu_types:
            require_one_of(name, list(GPU_TYPES), f"{key}.gpu_types", "GPU type")
        for name in ("gpus", "cpu_cores_per_gpu"):
            require(_positive_int(getattr(self, name)), f"{key}.{name}",
                    f"must be a positive integer, got {getattr(self, name)!r}")

    @property
    def dtype_bytes(self) -> int:
        """Bytes per stored element."""
        return DTYPE_BYTES[self.dtype]
