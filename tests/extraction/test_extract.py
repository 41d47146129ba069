"""rightsize extract end to end on a small synthetic corpus (HuBERT-ECG small, random weights):
layout, cohort-readable shards, bad records, resumption, task slicing and determinism."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq
import pytest
import wfdb
from extract_fixtures import extract, make_corpus, metrics, sums, write_params

from rightsize.encoders.ecg_files import LEADS
from rightsize.encoders.synthetic_ecg import synthetic_ecg


@pytest.fixture
def corpus(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("OMP_NUM_THREADS", "1")
    make_corpus(tmp_path, 6)
    write_params(tmp_path)
    return tmp_path


def test_layout_index_checksums_and_cost_only_note(corpus: Path) -> None:
    assert extract(corpus, "--metrics", "m.json", "--events", "runs") == 0
    out = corpus / "out"
    shards = sorted((out / "shards").glob("*.parquet"))
    assert [p.name for p in shards] == ["shard-00000.parquet", "shard-00001.parquet",
                                        "shard-00002.parquet"]
    table = pq.read_table(shards[0])
    assert table.column_names == ["subject_id", "study_id", "embedding"]
    emb = np.asarray(table.column("embedding").to_pylist(), dtype=np.float32)
    assert emb.shape == (2, 93, 512)                       # 93 tokens x HuBERT-ECG small
    assert str(table.schema.field("embedding").type.value_type.value_type) == "halffloat"
    meta = json.loads(table.schema.metadata[b"rightsize.extract"])
    assert meta["features"] == "random weights (seed 0): features for cost only"
    index = pq.read_table(out / "index.parquet").to_pydict()
    assert index["study_id"] == [str(40_000_000 + i) for i in range(6)]
    assert index["shard"] == [0, 0, 1, 1, 2, 2] and index["row"] == [0, 1] * 3
    assert not any(index["resampled"])
    desc = json.loads((out / "extract.json").read_text())
    assert desc["features"].endswith("features for cost only") and desc["bad"] == 0
    listed = {line.split("  ")[1] for line in sums(out).splitlines()}
    assert listed == {p.relative_to(out).as_posix() for p in out.rglob("*")
                      if p.is_file() and p.name != "SHA256SUMS"}
    from rightsize.cli import main
    from rightsize.encoders.compute_dtype import resolve

    assert main(["verify", str(out), "-q"]) == 0                  # rightsize verify reads it
    m = metrics(corpus / "m.json")
    assert m["records"] == 6 and m["shards_run"] == 3 and m["complete"]
    chosen = resolve("auto", "cpu")                    # this machine's answer to auto
    assert m["compute_dtype"] == chosen.as_dict()
    if chosen.dtype == "float32":
        assert m["bf16_vs_float32"] == "not measured: the run computed in float32"
    else:                    # every hidden state up to the stored one, first batch of rank 0
        assert set(m["bf16_vs_float32"]) == {"inputs", "dtype", *(f"layer_{k}" for k in range(9))}
    assert m["features"].endswith("features for cost only")


def test_shards_are_a_cohort_files_ecg_input(corpus: Path) -> None:
    from rightsize.cohort.files_source import FilesCohort

    assert extract(corpus) == 0
    ids = [str(10_000_000 + i) for i in range(6)]
    with open(corpus / "labels.csv", "w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(["subject_id", "lvef", "split"])
        w.writerows([s, 40 + i, ["train", "train", "train", "train", "val", "test"][i]]
                    for i, s in enumerate(ids))
    import pyarrow as pa

    pq.write_table(pa.table({"subject_id": ids, "clip": [0] * 6,
                             "embedding": [[0.5] * 8] * 6}), corpus / "echo.parquet")
    from rightsize.cohort.config import CohortConfig
    from rightsize.params import parse

    cfg = parse(CohortConfig, {"source": "files", "n_subjects": 6, "echo_dim": 8,
                               "ecg_dim": 512, "max_clips": 1, "ecg_tokens": None,
                               "splits": {"train": 4, "val": 1, "test": 1},
                               "files": {"echo": "echo.parquet", "ecg": "out/shards",
                                         "labels": "labels.csv"}}, "cohort")
    cohort = FilesCohort(cfg)
    assert cohort.ecg_tokens == 93 and cohort.has_ecg.all()
    ecg = next(cohort.chunks()).ecg
    want = np.asarray(pq.read_table(corpus / "out/shards/shard-00001.parquet")
                      .column("embedding")[0].as_py(), dtype=np.float32)
    np.testing.assert_array_equal(ecg[2], want)


def test_one_worker_two_workers_and_two_tasks_write_the_same_bytes(corpus: Path) -> None:
    assert extract(corpus, out="one") == 0
    assert extract(corpus, "--workers", "2", out="two") == 0
    assert extract(corpus, "--task", "1/2", out="tasks") == 0
    assert not (corpus / "tasks" / "SHA256SUMS").exists()          # task 0's shards missing
    assert sorted(p.name for p in (corpus / "tasks" / "shards").glob("*.parquet")) == \
        ["shard-00002.parquet"]                                     # task 1 of 2: shard 2
    assert extract(corpus, "--task", "0/2", out="tasks") == 0
    assert sums(corpus / "one") == sums(corpus / "two") == sums(corpus / "tasks")


def test_rerun_redoes_only_missing_or_damaged_shards(corpus: Path) -> None:
    assert extract(corpus, "--metrics", "a.json") == 0
    before = sums(corpus / "out")
    shards = corpus / "out" / "shards"
    (shards / "shard-00000.parquet").unlink()
    damaged = shards / "shard-00002.parquet"
    damaged.write_bytes(damaged.read_bytes()[:-100])
    (shards / ".shard-00000.parquet.abc.tmp").write_bytes(b"a killed worker's leftover")
    from rightsize.extraction.config import ExtractConfig
    from rightsize.extraction.plan import make_plan
    from rightsize.extraction.record_list import read_record_list
    from rightsize.params import load_block

    cfg = load_block(corpus / "params.yaml", "extract", ExtractConfig)
    plan = make_plan(cfg, read_record_list(Path("corpus/record_list.csv"), Path("corpus")),
                     corpus / "out", None)
    assert plan.todo == [0, 2] and not (corpus / "out" / "SHA256SUMS").exists()
    assert extract(corpus, "--metrics", "b.json") == 0
    m = metrics(corpus / "b.json")
    assert (m["shards_run"], m["shards_reused"], m["records"]) == (2, 1, 4)
    assert sums(corpus / "out") == before
    assert not list(shards.glob(".*.tmp"))
    assert extract(corpus, "--metrics", "c.json") == 0
    assert metrics(corpus / "c.json")["shards_run"] == 0


def test_changed_settings_redo_every_shard(corpus: Path) -> None:
    assert extract(corpus) == 0
    write_params(corpus, layers=[4, 8])
    assert extract(corpus, "--metrics", "m.json") == 0
    assert metrics(corpus / "m.json")["shards_run"] == 3
    table = pq.read_table(corpus / "out/shards/shard-00000.parquet")
    assert table.column_names == ["subject_id", "study_id", "layer_4", "embedding"]


def _bad_records(corpus: Path) -> None:
    """Record 3 loses lead V4; record 4 holds 4 s; record 5 is stored at 250 Hz."""
    lst = list(csv.DictReader(open(corpus / "corpus/record_list.csv")))
    sig = synthetic_ecg(np.random.default_rng(9), 500, 10)
    names = [lead for lead in LEADS if lead != "V4"]
    rec3 = corpus / "corpus" / lst[3]["path"]
    wfdb.wrsamp(rec3.name, fs=500, units=["mV"] * 11, sig_name=names,
                p_signal=np.delete(sig, LEADS.index("V4"), axis=0).T, fmt=["16"] * 11,
                adc_gain=[1000.0] * 11, baseline=[0] * 11, write_dir=str(rec3.parent))
    from rightsize.encoders.ecg_files import write_ecg

    write_ecg(corpus / "corpus" / lst[4]["path"], sig[:, :2000], 500)
    write_ecg(corpus / "corpus" / lst[5]["path"],
              synthetic_ecg(np.random.default_rng(10), 250, 10), 250)


@pytest.mark.parametrize("workers", ["1", "2"])
def test_a_bad_record_stops_the_run_naming_it_and_keeps_what_was_written(
        corpus: Path, capsys: pytest.CaptureFixture[str], workers: str) -> None:
    _bad_records(corpus)
    assert extract(corpus, "--workers", workers) == 4
    err = capsys.readouterr().err
    assert "s40000003/40000003: missing lead: no V4" in err and "--skip-bad" in err
    assert (corpus / "out/shards/shard-00000.parquet").is_file()       # done before it
    assert not (corpus / "out/SHA256SUMS").exists()
    rows = list(csv.DictReader(open(corpus / "out/errors.csv")))
    assert [r["reason"] for r in rows] == ["missing lead"]


def test_skip_bad_lists_every_bad_record_and_notes_resampling(corpus: Path) -> None:
    _bad_records(corpus)
    assert extract(corpus, "--skip-bad") == 0
    rows = list(csv.DictReader(open(corpus / "out/errors.csv")))
    assert [(r["study_id"], r["reason"]) for r in rows] == [("40000003", "missing lead"),
                                                             ("40000004", "too short")]
    index = pq.read_table(corpus / "out/index.parquet").to_pydict()
    assert index["study_id"] == ["40000000", "40000001", "40000002", "40000005"]
    assert index["resampled"] == [False, False, False, True]
    assert index["stored_hz"][-1] == 250.0 and index["row"] == [0, 1, 0, 0]
    desc = json.loads((corpus / "out/extract.json").read_text())
    assert desc["resampled_to_500_hz"] == {"250 Hz": 1} and desc["bad"] == 2
    assert pq.read_table(corpus / "out/shards/shard-00002.parquet").num_rows == 1


def test_event_logs_per_worker_read_by_rightsize_telemetry(corpus: Path) -> None:
    from rightsize import read_scalars
    from rightsize.cli import main

    assert extract(corpus, "--workers", "2", "--events", "runs") == 0
    runs = sorted(p.name for p in (corpus / "runs").iterdir())
    assert len(runs) == 2 and all(r.endswith((".rank0", ".rank1")) for r in runs)
    table = read_scalars(corpus / "runs")
    tags = set(table.to_pandas()["tag"])
    assert {"extract/records_per_s", "extract/batch_s"} <= tags
    # workers leave without the interpreter's teardown: every batch's event is on disk anyway
    # (6 records in shards of 2, batches of 2: 3 batches over the two workers)
    assert (table.to_pandas()["tag"] == "extract/batch_s").sum() == 3
    # like any training run: an "epoch" is the corpus, a step one batch of batch_size inputs
    assert main(["telemetry", str(corpus / "runs"), "--train-records", "6", "--global-batch",
                 "2", "--json", "t.json", "-q"]) == 0
    report = json.loads((corpus / "t.json").read_text())
    assert len(report["runs"]) == 2


def test_weights_that_do_not_fit_exit_4_naming_the_tensor(
        corpus: Path, capsys: pytest.CaptureFixture[str]) -> None:
    import torch
    from safetensors.torch import save_file

    from rightsize.encoders.weights import build_extractor
    from rightsize.extraction.config import ExtractConfig
    from rightsize.extraction.worker import geometry_of

    model, _ = build_extractor("small", None, 0, 8, geometry_of(ExtractConfig("x", "y")))
    state = {k: v.detach().clone() for k, v in model.state_dict().items()}
    state["feature_projection.projection.weight"] = torch.zeros(512, 256)
    (corpus / "w").mkdir()
    save_file(state, str(corpus / "w" / "model.safetensors"))
    write_params(corpus, weights="w", workers=2)          # raised in a worker process
    assert extract(corpus) == 4
    assert "tensor feature_projection.projection.weight has shape (512, 256)" in \
        capsys.readouterr().err
    assert not list((corpus / "out" / "shards").glob("*.parquet")) \
        if (corpus / "out" / "shards").exists() else True


def test_bf16_difference_is_measured_per_layer() -> None:
    """The comparison a bf16 run reports (rank 0's first batch), here with CPU autocast."""
    import torch

    from rightsize.encoders.compute_dtype import difference
    from rightsize.encoders.models import EcgGeometry
    from rightsize.encoders.weights import build_extractor

    model, _ = build_extractor("small", None, 0, 8, EcgGeometry())
    x = torch.from_numpy(np.random.default_rng(0).uniform(-1, 1, (2, 6000)).astype(np.float32))
    d = difference(model, x, (4, 8), "cpu")
    assert d["inputs"] == 2 and set(d) == {"inputs", "dtype", "layer_4", "layer_8"}
    for layer in ("layer_4", "layer_8"):
        assert 0 < d[layer]["max_abs"] and 1e-4 < d[layer]["rel_rms"] < 0.2   # bf16: ~3 digits
