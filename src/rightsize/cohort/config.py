"""The ``cohort`` block of ``params.yaml``: what manifest to build and from what.

Parsed once at the CLI edge with :func:`rightsize.params.load_block`; every range error is a
one-line :class:`~rightsize.errors.ParamsError` naming the dotted key (``cohort.max_clips``).

Example block::

    cohort:
      source: synthetic        # synthetic | files
      seed: 0
      n_subjects: 1208
      splits: {train: 829, val: 131, test: 248}
      echo_dim: 1024
      ecg_dim: 768
      max_clips: 8             # 1 = pooled (one vector per study)
      row_group_size: 128
      ef_threshold: 40.0
      noise_sd: 5.0
      missing_echo_frac: 0.03
      missing_ecg_frac: 0.03
      n_views: 4               # synthetic only: distinct clip view/phase keys
      files: {echo: null, ecg: null, labels: null}

File paths under ``files`` are relative to the working directory (the repo root under DVC).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from rightsize.params import require

SOURCES = ("synthetic", "files")


@dataclass(frozen=True)
class SplitsConfig:
    """Number of subjects per split; the three must sum to ``n_subjects``."""

    train: int = 829
    val: int = 131
    test: int = 248

    def validate(self, key: str) -> None:
        """Every split holds at least one subject."""
        for name in ("train", "val", "test"):
            require(getattr(self, name) >= 1, f"{key}.{name}", "must be a positive integer")

    def as_dict(self) -> dict[str, int]:
        """``{"train": n, "val": n, "test": n}``."""
        return {"train": self.train, "val": self.val, "test": self.test}


@dataclass(frozen=True)
class FilesConfig:
    """Input files for ``source: files`` (see :mod:`rightsize.cohort.files_source`)."""

    echo: str | None = None
    ecg: str | None = None
    labels: str | None = None


@dataclass(frozen=True)
class CohortConfig:
    """Geometry and provenance of ``data/manifest.parquet``."""

    source: str = "synthetic"
    seed: int = 0
    n_subjects: int = 1208
    splits: SplitsConfig = field(default_factory=SplitsConfig)
    echo_dim: int = 1024
    ecg_dim: int = 768
    max_clips: int = 8
    row_group_size: int = 128
    ef_threshold: float = 40.0
    noise_sd: float = 5.0
    missing_echo_frac: float = 0.03
    missing_ecg_frac: float = 0.03
    n_views: int = 4
    files: FilesConfig = field(default_factory=FilesConfig)

    def validate(self, key: str) -> None:
        """Check ranges and cross-key consistency; errors name ``<key>.<field>``."""
        require(self.source in SOURCES, f"{key}.source",
                f"must be one of {', '.join(SOURCES)}, got {self.source!r}")
        require(self.seed >= 0, f"{key}.seed", "must be a non-negative integer")
        for name in ("n_subjects", "echo_dim", "ecg_dim", "max_clips", "row_group_size"):
            require(getattr(self, name) >= 1, f"{key}.{name}", "must be a positive integer")
        require(self.max_clips <= 4096, f"{key}.max_clips", "must be at most 4096")
        total = self.splits.train + self.splits.val + self.splits.test
        require(total == self.n_subjects, f"{key}.splits",
                f"train + val + test = {total} must equal n_subjects = {self.n_subjects}")
        require(0.0 < self.ef_threshold < 100.0, f"{key}.ef_threshold",
                "must be a percentage strictly between 0 and 100")
        require(self.noise_sd >= 0.0, f"{key}.noise_sd", "must be non-negative")
        for name in ("missing_echo_frac", "missing_ecg_frac"):
            require(0.0 <= getattr(self, name) < 1.0, f"{key}.{name}", "must be in [0, 1)")
        require(self.n_views >= 2, f"{key}.n_views", "must be at least 2")
        if self.source == "files":
            for name in ("echo", "ecg", "labels"):
                require(bool(getattr(self.files, name)), f"{key}.files.{name}",
                        "a path is required when source is files")

    @property
    def echo_values(self) -> int:
        """Floats per study in the flattened ``echo`` column (``max_clips * echo_dim``)."""
        return self.max_clips * self.echo_dim

    @property
    def payload_bytes(self) -> int:
        """float32 embedding bytes of the manifest (see :func:`payload_bytes`)."""
        return payload_bytes(self.n_subjects, self.max_clips, self.echo_dim, self.ecg_dim)


def payload_bytes(n: int, max_clips: int, echo_dim: int, ecg_dim: int) -> int:
    """Float32 embedding payload of ``n`` studies: ``n * (max_clips*echo_dim + ecg_dim) * 4``.

    The one formula behind the manifest metadata and the footprint's payload table.
    """
    return n * (max_clips * echo_dim + ecg_dim) * 4
