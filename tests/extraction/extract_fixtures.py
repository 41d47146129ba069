"""A small corpus and params for extract tests: HuBERT-ECG small, a few records, tiny shards."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import yaml

from rightsize.cli import main
from rightsize.extraction.demo_corpus import write_demo_corpus

REPO = Path(__file__).resolve().parents[2]


def write_params(folder: Path, records: int = 6, **extract: Any) -> Path:
    """params.yaml of the repository with a small ``extract`` block pointing at ``folder``."""
    params = yaml.safe_load((REPO / "params.yaml").read_text())
    params["ecg_demo"].update(records=records)
    params["extract"].update({"records": "corpus/record_list.csv", "root": "corpus",
                              "size": "small", "layers": [8], "shard_records": 2,
                              "batch_size": 2, "workers": 1, **extract})
    path = folder / "params.yaml"
    path.write_text(yaml.safe_dump(params, sort_keys=False))
    return path


def make_corpus(folder: Path, records: int = 6, seed: int = 0) -> Path:
    """The synthetic corpus under ``folder/corpus``; returns its record list."""
    return write_demo_corpus(folder / "corpus", records, seed)


def extract(folder: Path, *args: str, out: str = "out") -> int:
    """``rightsize extract`` in ``folder`` (the test chdirs there) with ``args``; exit code."""
    return main(["extract", "--params", str(folder / "params.yaml"), "--out",
                 str(folder / out), "-q", *args])


def sums(folder: Path) -> str:
    """The output folder's SHA256SUMS text."""
    return (folder / "SHA256SUMS").read_text()


def metrics(path: Path) -> dict[str, Any]:
    """A metrics JSON file."""
    return json.loads(path.read_text())
