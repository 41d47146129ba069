"""A shard is done only if its inputs are the ones it was made from: record files, list rows,
its own record; bad records are tried again on every run."""

from __future__ import annotations

import csv
import json
import os
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq
import pytest
from extract_fixtures import extract, make_corpus, metrics, write_params

from rightsize.encoders.ecg_files import write_ecg
from rightsize.encoders.synthetic_ecg import synthetic_ecg


@pytest.fixture
def corpus(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("OMP_NUM_THREADS", "1")
    make_corpus(tmp_path, 6)
    write_params(tmp_path)
    return tmp_path


def _plan(corpus: Path, verify: bool = False):
    from rightsize.extraction.config import ExtractConfig
    from rightsize.extraction.plan import make_plan
    from rightsize.extraction.record_list import read_record_list
    from rightsize.params import load_block

    cfg = load_block(corpus / "params.yaml", "extract", ExtractConfig)
    records = read_record_list(Path("corpus/record_list.csv"), Path("corpus"))
    return make_plan(cfg, records, corpus / "out", None, verify)


def _rows(corpus: Path) -> list[dict[str, str]]:
    return list(csv.DictReader(open(corpus / "corpus/record_list.csv")))


def _write_rows(corpus: Path, rows: list[dict[str, str]]) -> None:
    with open(corpus / "corpus/record_list.csv", "w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)


def test_a_replaced_record_is_extracted_again(corpus: Path) -> None:
    assert extract(corpus) == 0
    before = pq.read_table(corpus / "out/shards/shard-00001.parquet").column("embedding")
    rec = corpus / "corpus" / _rows(corpus)[3]["path"]
    write_ecg(rec, synthetic_ecg(np.random.default_rng(99), 500, 10), 500)
    plan = _plan(corpus)
    assert plan.todo == [1] and plan.why[1].startswith("files/p1000/p10000003/s40000003/")
    assert extract(corpus, "--metrics", "m.json") == 0
    assert metrics(corpus / "m.json")["shards_run"] == 1
    after = pq.read_table(corpus / "out/shards/shard-00001.parquet").column("embedding")
    assert after[0] == before[0] and after[1] != before[1]          # row 3: the new record


def test_an_edited_subject_id_redoes_its_shard_and_the_index_follows(corpus: Path) -> None:
    assert extract(corpus) == 0
    rows = _rows(corpus)
    rows[4]["subject_id"] = "77777777"
    _write_rows(corpus, rows)
    plan = _plan(corpus)
    assert plan.todo == [2] and plan.why[2] == "list row 5 changed"
    assert extract(corpus) == 0
    shard = pq.read_table(corpus / "out/shards/shard-00002.parquet").to_pydict()
    assert shard["subject_id"][0] == "77777777"
    index = pq.read_table(corpus / "out/index.parquet").to_pydict()
    assert index["subject_id"][4] == "77777777"


def test_an_edited_shard_record_is_redone(corpus: Path) -> None:
    assert extract(corpus) == 0
    path = corpus / "out/shards/shard-00000.json"
    rec = json.loads(path.read_text())
    rec["rows"] = [1, 0]
    path.write_text(json.dumps(rec))
    plan = _plan(corpus)
    assert plan.todo == [0] and plan.why[0] == "the shard record was edited or damaged"


def test_same_size_same_time_new_content_needs_verify_inputs(corpus: Path) -> None:
    assert extract(corpus) == 0
    dat = corpus / "corpus" / (_rows(corpus)[0]["path"] + ".dat")
    st = dat.stat()
    data = bytearray(dat.read_bytes())
    data[100] ^= 1
    dat.write_bytes(bytes(data))
    os.utime(dat, ns=(st.st_atime_ns, st.st_mtime_ns))
    assert _plan(corpus).todo == []
    plan = _plan(corpus, verify=True)
    assert plan.todo == [0] and "40000000.dat changed" in plan.why[0]
    assert extract(corpus, "--verify-inputs", "--metrics", "m.json") == 0
    assert metrics(corpus / "m.json")["shards_run"] == 1


def test_a_bad_record_fixed_is_tried_again_even_with_unchanged_files(corpus: Path) -> None:
    """The header is damaged then restored with its size and time kept: only trying the bad
    record again can tell (as for a permission fixed: no file changes)."""
    hea = corpus / "corpus" / (_rows(corpus)[5]["path"] + ".hea")
    good = hea.read_text()
    st = hea.stat()
    hea.write_text(good.replace(" V4", " X4"))
    os.utime(hea, ns=(st.st_atime_ns, st.st_mtime_ns))
    assert extract(corpus, "--skip-bad") == 0
    assert [r["reason"] for r in csv.DictReader(open(corpus / "out/errors.csv"))] == \
        ["missing lead"]
    assert _plan(corpus).todo == []                                  # still bad: kept
    hea.write_text(good)
    os.utime(hea, ns=(st.st_atime_ns, st.st_mtime_ns))
    plan = _plan(corpus)
    assert plan.todo == [2] and "bad before, readable now" in plan.why[2]
    assert extract(corpus, "--metrics", "m.json") == 0
    m = metrics(corpus / "m.json")
    assert m["shards_run"] == 1 and m["counts"]["bad"] == 0 and m["counts"]["good"] == 6
