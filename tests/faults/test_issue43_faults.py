"""A user's mistake is exit 2 or 4 with one line naming the key or file, never exit 1, and
the report never calls an unusable file "ok" (issue 43, items 9, 12, 15, 16, 18, 19)."""

from __future__ import annotations

import argparse
import os
import shutil

import pytest
import torch
import yaml
from fault_helpers import rightsize


def _params(base, tmp_path, block: str, **values) -> str:  # noqa: ANN001
    params = yaml.safe_load((base / "params.yaml").read_text())
    params.setdefault(block, {}).update(values)
    path = tmp_path / "params.yaml"
    path.write_text(yaml.safe_dump(params))
    return str(path)


def test_an_unwritable_extraction_folder_with_a_shard_gone_is_exit_2(corpus, tmp_path, as_user):
    ex = tmp_path / "ex"                                   # item 9
    shutil.copytree(corpus / "ex", ex)
    (ex / "shards" / "shard-00001.parquet").unlink()
    before = sorted(p.name for p in ex.rglob("*"))
    os.chmod(ex, 0o555)
    try:
        res = rightsize(["extract", "--params", "params.yaml", "--out", ex, "-q"], cwd=corpus,
                        user=as_user, home=tmp_path)
    finally:
        os.chmod(ex, 0o755)
    assert res.rc == 2, res.err
    assert res.error_line() == f"rightsize: error: {ex}: cannot write in this folder " \
                               "(permission denied)"
    assert sorted(p.name for p in ex.rglob("*")) == before


@pytest.mark.parametrize(("block", "verb"), [
    ("ecg_demo", ["ecg-demo", "c"]),
    ("extract", ["extract", "--out", "o"]),
    ("train", ["train", "ecg", "--manifest", "m.parquet", "--out", "o"]),
    ("evaluate", ["evaluate", "ecg", "--manifest", "m.parquet", "--model", "o",
                  "--json", "e.json"]),
])
@pytest.mark.parametrize("seed", [-1])      # (the range, every block: test_params_fuzz)
def test_a_seed_out_of_range_is_exit_2_naming_it(block, verb, seed, corpus, tmp_path):
    params = _params(corpus, tmp_path, block, seed=seed)   # item 12
    res = rightsize([*verb, "--params", params], cwd=tmp_path)
    assert res.rc == 2, res.err
    assert res.error_line() == (f"rightsize: error: {block}.seed: must be an integer from 0 "
                                f"to 2147483647, got {seed}")


def test_a_pt_with_a_pickled_object_is_refused_in_rightsizes_words(corpus, tmp_path):
    weights = tmp_path / "w"                               # item 15
    weights.mkdir()
    torch.save({"a": torch.zeros(2), "ns": argparse.Namespace(x=1)}, weights / "model.pt")
    params = _params(corpus, tmp_path, "extract", weights=str(weights))
    res = rightsize(["extract", "--params", params, "--out", tmp_path / "o"], cwd=corpus)
    assert res.rc == 4, res.err
    line = res.error_line()
    assert str(weights / "model.pt") in line and "argparse.Namespace" in line
    assert "\x1b" not in res.err and "trust the source" not in res.err


def test_an_unreadable_record_list_is_exit_2(corpus, tmp_path, as_user):
    src = tmp_path / "corpus"                              # item 16
    shutil.copytree(corpus / "corpus", src)
    os.chmod(src / "record_list.csv", 0)
    params = _params(corpus, tmp_path, "extract", records=str(src / "record_list.csv"),
                     root=str(src))
    res = rightsize(["extract", "--params", params, "--out", tmp_path / "o"], cwd=tmp_path,
                    user=as_user, home=tmp_path)
    assert res.rc == 2, res.err
    assert res.error_line().startswith(f"rightsize: error: {src / 'record_list.csv'}: ")
    assert "Permission denied" in res.err


def test_cohort_check_outside_a_project_needs_no_params(project, sandbox):
    res = rightsize(["cohort", "--check", project / "manifest.parquet"], cwd=sandbox)
    assert res.rc == 0, res.err                            # item 18
    assert res.out.startswith(f"{project / 'manifest.parquet'}: ok: 120 subjects")


@pytest.mark.parametrize(("text", "kind"), [("[]", "empty list"), ('{"a": 1}', "object of 1 keys")])
def test_a_metrics_file_of_the_wrong_shape_is_never_called_ok(text, kind, corpus, tmp_path):
    metrics = tmp_path / "metrics"                         # item 19
    metrics.mkdir()
    (metrics / "extract.json").write_text(text)
    res = rightsize(["report", "--params", corpus / "params.yaml", "--metrics", metrics,
                     "--out", tmp_path / "r", "-q"], cwd=tmp_path)
    assert res.rc == 0, res.err
    md = (tmp_path / "r" / "report.md").read_text()
    assert "extract.json is ok" not in md
    assert (f"Not available: metrics/extract.json does not hold what this section reads "
            f"(a JSON {kind})") in md
