"""``rightsize planted-ceiling`` end to end on a small cohort: the oracle per count, the told
learner beside its null (``null_weight`` = mean |event| / N), and the headline."""

from __future__ import annotations

import json

import pytest
import yaml

from rightsize.cli import main
from rightsize.cohort.config import CohortConfig, SplitsConfig
from rightsize.cohort.synthetic import SyntheticCohort
from rightsize.probes.evaluation.learnable import probe_view

COHORT = {"n_subjects": 240, "splits": {"train": 160, "val": 30, "test": 50}, "echo_dim": 96,
          "ecg_dim": 64, "ecg_tokens": 8}


def test_the_told_learner_has_its_null_and_the_headline_both(tmp_path):
    params = tmp_path / "params.yaml"
    params.write_text(yaml.safe_dump({
        "cohort": COHORT, "train": {"pca_rank": 16}, "token_cost": {"tokens": [1]},
        "planted_ceiling": {"learner_seeds": 1, "learner_steps": 20}}))
    out, head = tmp_path / "ceiling.json", tmp_path / "headline.json"
    assert main(["planted-ceiling", "--params", str(params), "--json", str(out),
                 "--headline", str(head), "-q"]) == 0
    doc = json.loads(out.read_text())
    assert doc["counts"] == [8]                          # the cohort's own count
    told = doc["tokens_8"]["told_learner"]
    # the null from the truth itself: the test subjects' planted tokens over N
    cfg = CohortConfig(n_subjects=240, splits=SplitsConfig(160, 30, 50), echo_dim=96,
                       ecg_dim=64, ecg_tokens=8)
    view = probe_view(SyntheticCohort(cfg), 16)
    test = (view.split == 2) & view.has_ecg & view.clip_mask.any(axis=1) & view.planted.any(1)
    assert told["null_weight"] == pytest.approx(view.planted[test].sum(axis=1).mean() / 8)
    headline = json.loads(head.read_text())["planted_ceiling"]
    assert headline["told_learner_null"] == told["null_weight"]
    assert headline["told_learner_weight"] == told["planted_weight_mean"]
    assert "fraction" not in json.dumps(doc)


def test_the_learner_not_told_runs_at_the_cohorts_own_count_only(tmp_path):
    params = tmp_path / "params.yaml"
    params.write_text(yaml.safe_dump({
        "cohort": COHORT, "train": {"pca_rank": 16}, "token_cost": {"tokens": [4]},
        "planted_ceiling": {"learner_seeds": 1, "learner_steps": 20}}))
    out = tmp_path / "ceiling.json"
    assert main(["planted-ceiling", "--params", str(params), "--json", str(out), "-q"]) == 0
    doc = json.loads(out.read_text())
    assert doc["counts"] == [4, 8]
    assert "blind_learner" not in doc["tokens_4"]          # not the probe's count
    told, blind = doc["tokens_8"]["told_learner"], doc["tokens_8"]["blind_learner"]
    assert (told["told"], blind["told"]) == (True, False)
    assert blind["null_weight"] == told["null_weight"]     # same subjects, same events
    assert blind["planted_weight_mean"] != told["planted_weight_mean"]
