"""The ``extract`` and ``ecg_demo`` params blocks as frozen dataclasses, checked at the edge."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from rightsize.encoders.compute_dtype import CHOICES as COMPUTE_CHOICES
from rightsize.extraction.slurm import SlurmConfig
from rightsize.params import require, require_one_of

DTYPES = ("float16", "float32")
EXECUTORS = ("local", "slurm")
MAX_CROPS = 720               # crops_per_record: an hour of 5-s crops
MAX_THREADS = 4096            # threads_per_worker: torch takes a C int; no node has more cores


def _positive_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value > 0


@dataclass(frozen=True)
class ExtractConfig:
    """What ``rightsize extract`` runs (``extract`` in params.yaml; docs/params.md).

    ``records`` is a record list in MIMIC-IV-ECG's ``record_list.csv`` layout (or parquet),
    its ``path`` column relative to ``root``. ``weights`` is a local folder (Hugging Face
    style: ``config.json`` + ``*.safetensors``, or a state dict file loaded with
    ``weights_only=True``); ``null`` = seeded random weights, features for cost only.
    ``layers`` are hidden-state indices (0 = the embeddings output, ``k`` = after layer k).
    ``to_cohort`` names the extractions of this record list that feed the probes: dvc.yaml's
    ``extract_to_cohort@<name>`` stage writes ``data/cohort_files/ecg_<name>``, a dependency
    of the ``cohort`` stage (docs/extract.md); ``[]`` = none.
    ``shard_records`` records make a shard, the unit of work and of resumption; batches of
    ``batch_size`` model inputs never cross a shard. ``workers`` processes (0 = one per
    ``threads_per_worker`` cores) each run torch on ``threads_per_worker`` threads: a fixed
    thread count, so the bytes do not depend on how many workers ran. ``compute_dtype``
    ``auto`` is resolved where the run starts (bfloat16 on a GPU or a CPU with AMX, else
    float32; :mod:`rightsize.encoders.compute_dtype`): the shards'
    fingerprint holds the dtype that ran.
    """

    records: str
    root: str
    size: str = "base"
    weights: str | None = None
    seed: int = 0
    layers: tuple[int, ...] = (12,)
    dtype: str = "float16"
    crops_per_record: int = 1
    shard_records: int = 64
    batch_size: int = 4
    workers: int = 0
    threads_per_worker: int = 1
    device: str = "cpu"
    compute_dtype: str = "auto"         # auto | float32 | bfloat16 (encoders/compute_dtype.py)
    skip_bad: bool = False
    executor: str = "local"
    slurm: SlurmConfig = field(default_factory=SlurmConfig)   # --executor slurm's array
    to_cohort: tuple[str, ...] = ()     # dvc.yaml: extract_to_cohort@<name> stages (a path part)

    def validate(self, key: str) -> None:
        """Raise ``ParamsError`` naming ``<key>.<field>`` for a bad value."""
        from rightsize.encoders.models import HUBERT_SIZES

        require_one_of(self.size, list(HUBERT_SIZES), f"{key}.size", "HuBERT-ECG size")
        depth = HUBERT_SIZES[self.size].layers
        require(bool(self.layers), f"{key}.layers", "must list at least one layer")
        for i, layer in enumerate(self.layers):
            require(isinstance(layer, int) and not isinstance(layer, bool)
                    and 0 <= layer <= depth, f"{key}.layers[{i}]",
                    f"must be a hidden-state index 0..{depth} of HuBERT-ECG {self.size}, "
                    f"got {layer!r}")
        require(len(set(self.layers)) == len(self.layers), f"{key}.layers",
                f"lists a layer twice: {list(self.layers)}")
        require_one_of(self.dtype, DTYPES, f"{key}.dtype", "storage dtype")
        require_one_of(self.executor, EXECUTORS, f"{key}.executor", "executor")
        for name in ("crops_per_record", "shard_records", "batch_size", "threads_per_worker"):
            require(_positive_int(getattr(self, name)), f"{key}.{name}",
                    f"must be a positive integer, got {getattr(self, name)!r}")
        require(self.threads_per_worker <= MAX_THREADS, f"{key}.threads_per_worker",
                f"must be at most {MAX_THREADS}, got {self.threads_per_worker!r}")
        require(self.crops_per_record <= MAX_CROPS, f"{key}.crops_per_record",
                f"must be at most {MAX_CROPS} (an hour of 5-s crops), got "
                f"{self.crops_per_record!r}")
        require(isinstance(self.workers, int) and self.workers >= 0, f"{key}.workers",
                f"must be >= 0 (0 = one per threads_per_worker cores), got {self.workers!r}")
        require(isinstance(self.device, str)
                and re.fullmatch(r"cpu|cuda(:[0-9]+)?", self.device) is not None,
                f"{key}.device", f"must be cpu, cuda or cuda:N, got {self.device!r}")
        require_one_of(self.compute_dtype, COMPUTE_CHOICES, f"{key}.compute_dtype",
                       "compute dtype")
        require(bool(self.records), f"{key}.records", "must name a record list")
        for i, name in enumerate(self.to_cohort):
            require(isinstance(name, str) and re.fullmatch(r"[A-Za-z0-9_-]{1,64}", name)
                    is not None, f"{key}.to_cohort[{i}]",
                    f"must be a name of letters, digits, _ or - (it becomes the folder "
                    f"data/cohort_files/ecg_<name>), got {name!r}")
        require(len(set(self.to_cohort)) == len(self.to_cohort), f"{key}.to_cohort",
                f"lists a name twice: {list(self.to_cohort)}")

    @property
    def stored_layers(self) -> tuple[int, ...]:
        """Layers in the order the shards store them (ascending)."""
        return tuple(sorted(self.layers))

    def fingerprint(self) -> dict[str, Any]:
        """What decides a shard's bytes: a shard written under another fingerprint is redone.
        A float32 run's fingerprint has no ``compute_dtype`` key (folders written before the
        key existed stay valid)."""
        return {"size": self.size, "seed": self.seed, "layers": list(self.stored_layers),
                "dtype": self.dtype, "crops_per_record": self.crops_per_record,
                "shard_records": self.shard_records, "batch_size": self.batch_size,
                "threads_per_worker": self.threads_per_worker, "device": self.device,
                **({} if self.computes_in == "float32" else {"compute_dtype": self.computes_in})}

    @property
    def computes_in(self) -> str:
        """The dtype the forwards run in on this machine (``compute_dtype`` resolved)."""
        from rightsize.encoders.compute_dtype import resolve

        return resolve(self.compute_dtype, self.device).dtype


@dataclass(frozen=True)
class EcgDemoConfig:
    """The synthetic demo corpus (``ecg_demo``): ``records`` ECG-like WFDB records."""

    records: int = 256
    seed: int = 0
    seconds: float = 10.0
    sample_hz: int = 500

    def validate(self, key: str) -> None:
        """Raise ``ParamsError`` naming ``<key>.<field>`` for a bad value."""
        for name, most in (("records", 1_000_000), ("sample_hz", 10_000)):
            value = getattr(self, name)
            require(_positive_int(value) and value <= most, f"{key}.{name}",
                    f"must be a positive integer up to {most:,}, got {value!r}")
        require(0 < self.seconds <= 3600, f"{key}.seconds",
                f"must be > 0 and at most 3600, got {self.seconds!r}")
