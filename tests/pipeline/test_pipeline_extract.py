"""extract -> cohort (source: files, 93 ECG tokens) -> fused, on extracted shards: the layout
``rightsize extract`` writes is the one ``cohort.files.ecg`` reads, and the fused probe trains
on it. The verbs run as the stages run them (one ``rightsize <verb>`` each)."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import yaml
from pipeline_helpers import REPO, TINY_PARAMS, run

pytestmark = pytest.mark.slow

SUBJECTS = 40


def _set(params: dict, dotted: str, value: object) -> None:
    node = params
    *parents, last = dotted.split(".")
    for p in parents:
        node = node[p]
    node[last] = value


def test_extracted_shards_feed_a_93_token_fused_run(tmp_path: Path, pipeline_env) -> None:
    params = yaml.safe_load((REPO / "params.yaml").read_text())
    for key, value in TINY_PARAMS.items():
        _set(params, key, value)
    ids = [str(10_000_000 + i) for i in range(SUBJECTS)]
    _set(params, "ecg_demo.records", SUBJECTS)
    params["cohort"].update(source="files", n_subjects=SUBJECTS, ecg_dim=512, ecg_tokens=None,
                            max_clips=2, splits={"train": 24, "val": 8, "test": 8},
                            files={"echo": "echo.parquet", "ecg": "data/ecg_tokens/shards",
                                   "labels": "labels.csv", "joined": None})
    (tmp_path / "params.yaml").write_text(yaml.safe_dump(params, sort_keys=False))
    rng = np.random.default_rng(0)
    lvef = rng.uniform(20, 70, SUBJECTS)
    with open(tmp_path / "labels.csv", "w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(["subject_id", "lvef"])
        w.writerows(zip(ids, lvef.round(1), strict=True))
    echo_dim = params["cohort"]["echo_dim"]
    rows = [(s, c, (rng.normal(size=echo_dim) + lvef[i] / 50).astype(np.float32).tolist())
            for i, s in enumerate(ids) for c in range(2)]
    pq.write_table(pa.table({"subject_id": [r[0] for r in rows], "clip": [r[1] for r in rows],
                             "embedding": [r[2] for r in rows]}), tmp_path / "echo.parquet")
    rs = ["rightsize"]
    run([*rs, "ecg-demo", "data/ecg_demo", "--params", "params.yaml", "-q"], tmp_path,
        pipeline_env)
    run([*rs, "extract", "--params", "params.yaml", "--out", "data/ecg_tokens",
         "--metrics", "metrics/extract.json", "-q"], tmp_path, pipeline_env)
    run([*rs, "cohort", "--params", "params.yaml", "--out", "data/manifest.parquet",
         "--metrics", "metrics/cohort.json", "-q"], tmp_path, pipeline_env)
    cohort = json.loads((tmp_path / "metrics/cohort.json").read_text())
    assert cohort["ecg_tokens"] == 93 and cohort["n_has_ecg"] == SUBJECTS
    run([*rs, "train", "fused", "--params", "params.yaml", "--manifest",
         "data/manifest.parquet", "--out", "models/fused", "--eval-json",
         "metrics/eval/fused.json", "-q"], tmp_path, pipeline_env)
    ev = json.loads((tmp_path / "metrics/eval/fused.json").read_text())
    assert ev["ecg_tokens"] == 93 and ev["test"]["mae"] > 0
    extract = json.loads((tmp_path / "metrics/extract.json").read_text())
    assert extract["features"].endswith("features for cost only") and extract["complete"]
