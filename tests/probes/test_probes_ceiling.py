"""The planted token's ceiling (rightsize.probes.evaluation.ceiling) on small synthetic cohorts."""

from __future__ import annotations

import dataclasses

import pytest

from rightsize.cohort.config import CohortConfig, SplitsConfig
from rightsize.probes.evaluation.ceiling import planted_ceiling
from rightsize.verbs.ceiling import counts

SMALL = CohortConfig(n_subjects=240, splits=SplitsConfig(train=160, val=30, test=50),
                     echo_dim=96, ecg_dim=64, ecg_tokens=8)


def test_the_oracle_finds_the_planted_token_and_reads_its_content():
    c = planted_ceiling(SMALL, pca_rank=32)
    assert c["ecg_tokens"] == 8 and c["code_dim"] == 7 and c["uniform"] == pytest.approx(1 / 9)
    for view in ("embedding", "probe_input"):
        assert c[view]["clip"]["top1"] > 0.95 and c[view]["clip"]["posterior"] > 0.9, view
        assert c[view]["clip"]["margin_median"] > 5, view
        assert c[view]["subject"]["top1"] >= c[view]["clip"]["top1"] - 0.02, view
    mae = c["test_mae"]
    assert mae["perfect"] <= mae["oracle"] + 1e-9 < mae["no_token"]
    assert mae["no_token"] - mae["oracle"] > 1.0       # the token is worth LVEF points
    assert 0 < c["n_subjects"] <= 50 and c["n_clips"] >= c["n_subjects"]


def test_a_view_too_narrow_for_the_codes_lowers_the_ceiling():
    # One principal direction of the clips cannot hold 7-dimensional codes (and the other
    # latents): the oracle in the probe's view falls well below the one in the embedding.
    c = planted_ceiling(SMALL, pca_rank=1)
    assert c["embedding"]["clip"]["top1"] > 0.95
    assert c["probe_input"]["clip"]["top1"] < 0.6 and c["probe_input"]["clip"]["posterior"] < 0.6
    assert c["test_mae"]["oracle"] > planted_ceiling(SMALL, pca_rank=32)["test_mae"]["oracle"]


def test_a_pooled_cohort_has_no_ceiling():
    with pytest.raises(ValueError, match="no planted token"):
        planted_ceiling(dataclasses.replace(SMALL, ecg_tokens=1), pca_rank=32)


def test_the_counts_are_those_above_one_and_the_cohorts_own():
    assert counts((1, 16, 93, 186), 1) == [16, 93, 186]
    assert counts((1, 16, 93, 186), 4) == [4, 16, 93, 186]
    assert counts((1,), 1) == []
