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
      ecg_tokens: 1            # 1 = pooled ECG; N > 1 = N tokens x ecg_dim per subject
      ecg_events: 16           # synthetic, N > 1: events of the record (0: one per token)
      ecg_event_leads: 12      # synthetic, HuBERT layout: leads an event is seen in
      ecg_event_energy: split  # split | copy: event energy divided over its tokens, or copied
      ecg_event_gain: 1.0      # amplitude of the event's ECG code and content
      row_group_size: 128
      target: {column: lvef, name: LVEF, unit: "%", range: [0, 100], threshold: 40}
      noise_sd: 5.0
      missing_echo_frac: 0.03
      missing_ecg_frac: 0.03
      n_views: 4               # synthetic only: distinct clip view/phase keys
      files: {echo: null, ecg: null, labels: null, joined: null}

File paths under ``files`` are relative to the working directory (the repo root under DVC).
``source: files`` reads either the three files ``echo``, ``ecg`` and ``labels`` or the one
``joined`` file (one row per subject; see :mod:`rightsize.cohort.joined_source`), never both.
``ecg_tokens: null`` (``source: files`` only) takes the token count from the ECG input.
``target`` names what the probes predict (:mod:`rightsize.cohort.target`).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from rightsize.cohort.target import TargetConfig
from rightsize.params import require

SOURCES = ("synthetic", "files")
ENERGIES = ("split", "copy")     # cohort.ecg_event_energy (rightsize.cohort.planted_tokens)
MAX_ECG_TOKENS = 4096
ROW_GROUP_BYTES = 16 * 2**20   # embedding bytes a row group holds at most (see rows_per_group)


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
    """Input files for ``source: files``: ``echo`` + ``ecg`` + ``labels``
    (:mod:`rightsize.cohort.files_source`) or ``joined`` (:mod:`rightsize.cohort.joined_source`).
    """

    echo: str | None = None
    ecg: str | None = None
    labels: str | None = None
    joined: str | None = None


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
    ecg_tokens: int | None = 1
    ecg_events: int = 16
    ecg_event_leads: int = 12
    ecg_event_energy: str = "split"
    ecg_event_gain: float = 1.0
    row_group_size: int = 128
    target: TargetConfig = field(default_factory=TargetConfig)
    ef_threshold: float | None = None    # moved to target.threshold: refused with a pointer
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
        for name in ("echo_dim", "ecg_dim"):   # embedding widths (768, 1024 here); a typo's
            require(getattr(self, name) <= 65536, f"{key}.{name}",   # TiB is no cohort
                    "must be at most 65536 (an embedding width)")
        if self.ecg_tokens is None:
            require(self.source == "files", f"{key}.ecg_tokens",
                    "must be a positive integer (null, inferring it from the ECG input, "
                    "needs source: files)")
        else:
            require(1 <= self.ecg_tokens <= MAX_ECG_TOKENS, f"{key}.ecg_tokens",
                    f"must be an integer in [1, {MAX_ECG_TOKENS}], got {self.ecg_tokens}")
        require(self.ecg_events == 0 or self.ecg_events >= 2, f"{key}.ecg_events",
                f"must be 0 (one event per token) or at least 2, got {self.ecg_events}")
        require(1 <= self.ecg_event_leads <= 12, f"{key}.ecg_event_leads",
                f"must be an integer in [1, 12], got {self.ecg_event_leads}")
        require(self.ecg_event_energy in ENERGIES, f"{key}.ecg_event_energy",
                f"must be one of {', '.join(ENERGIES)}, got {self.ecg_event_energy!r}")
        require(0.0 < self.ecg_event_gain <= 100.0, f"{key}.ecg_event_gain",
                f"must be in (0, 100], got {self.ecg_event_gain}")
        total = self.splits.train + self.splits.val + self.splits.test
        require(total == self.n_subjects, f"{key}.splits",
                f"train + val + test = {total} must equal n_subjects = {self.n_subjects}")
        require(self.ef_threshold is None, f"{key}.ef_threshold",
                "moved: set cohort.target.threshold instead")
        if self.source == "synthetic":
            require(self.target.column == "lvef", f"{key}.target.column",
                    "the synthetic cohort's label column is lvef (source: files reads yours)")
            require(self.target.label() == TargetConfig().label(), f"{key}.target",
                    "the synthetic cohort generates LVEF (%) in [0, 100]: only "
                    "target.threshold applies to it (source: files reads your own target)")
        require(self.noise_sd >= 0.0, f"{key}.noise_sd", "must be non-negative")
        for name in ("missing_echo_frac", "missing_ecg_frac"):
            require(0.0 <= getattr(self, name) < 1.0, f"{key}.{name}", "must be in [0, 1)")
        require(self.n_views >= 2, f"{key}.n_views", "must be at least 2")
        if self.source == "files" and self.files.joined:
            for name in ("echo", "ecg", "labels"):
                require(not getattr(self.files, name), f"{key}.files.{name}",
                        "give either files.joined or files.echo/ecg/labels, not both")
        elif self.source == "files":
            for name in ("echo", "ecg", "labels"):
                require(bool(getattr(self.files, name)), f"{key}.files.{name}",
                        "a path is required when source is files (or give files.joined)")

    def rows_per_group(self, ecg_tokens: int) -> int:
        """Subjects per manifest row group: ``row_group_size``, or fewer so that a row group
        holds at most ``ROW_GROUP_BYTES`` (16 MiB) of embeddings.

        Only token-level ECG reaches the cap (a default pooled row is 35 KiB: 128 rows are
        4.5 MiB; at 186 tokens a row is 604 KiB: 27 rows). It bounds the memory of building
        and of loading (parquet decodes a fixed-size list with two int16 levels per float,
        so reading a row group takes ~5x its bytes).
        """
        row = (self.max_clips * self.echo_dim + ecg_tokens * self.ecg_dim) * 4
        return max(1, min(self.row_group_size, ROW_GROUP_BYTES // row))

    @property
    def echo_values(self) -> int:
        """Floats per study in the flattened ``echo`` column (``max_clips * echo_dim``)."""
        return self.max_clips * self.echo_dim



def payload_bytes(n: int, max_clips: int, echo_dim: int, ecg_dim: int,
                  ecg_tokens: int = 1) -> int:
    """Float32 embedding payload of ``n`` studies:
    ``n * (max_clips*echo_dim + ecg_tokens*ecg_dim) * 4``.

    The one formula behind the manifest metadata and the footprint's payload table.
    """
    return n * (max_clips * echo_dim + ecg_tokens * ecg_dim) * 4
