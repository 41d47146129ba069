"""The told learner (rightsize.probes.evaluation.learnable): what a train split allows."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from rightsize.cohort.config import CohortConfig, SplitsConfig
from rightsize.cohort.synthetic import SyntheticCohort
from rightsize.params import ParamsError, parse
from rightsize.probes.evaluation.learnable import (
    LearnerConfig,
    learn_match,
    probe_view,
    told_learner,
)

FEW = CohortConfig(n_subjects=240, splits=SplitsConfig(train=160, val=30, test=50),
                   echo_dim=96, ecg_dim=64, ecg_tokens=8)
MANY = dataclasses.replace(FEW, n_subjects=600, splits=SplitsConfig(train=400, val=80, test=120))


def test_the_view_holds_the_codes_span_in_the_probe_coordinates():
    view = probe_view(SyntheticCohort(FEW), pca_rank=32)
    assert view.clips.shape == (240, FEW.max_clips, 32) and view.tokens.shape == (240, 8, 32)
    for basis in (view.echo_codes, view.ecg_codes):
        assert basis.shape == (32, 7)                          # r = N - 1 codes dimensions
        np.testing.assert_allclose(basis.T @ basis, np.eye(7), atol=1e-5)
    assert not view.tokens[~view.has_ecg].any() and not view.clips[~view.clip_mask].any()


def test_the_match_is_learnt_from_enough_train_subjects_and_not_from_too_few():
    # Same generator and geometry: 400 train subjects teach the told learner the echo->ECG
    # match (weight on t* far above uniform 1/8), 160 do not (the sample-size wall that
    # the default cohort hits at 93 and 186 tokens).
    many = learn_match(probe_view(SyntheticCohort(MANY), 32), seed=0, steps=300)
    few = learn_match(probe_view(SyntheticCohort(FEW), 32), seed=0, steps=300)
    assert many["train_subjects"] == 400 and few["train_subjects"] == 160
    assert many["planted_weight"] > 0.4 > 0.2 > few["planted_weight"]
    assert many["test_mae"] < few["test_mae"]
    assert 0 <= many["step"] <= 300 and many["step"] % 10 == 0


def test_an_event_of_several_tokens_is_learnt_where_one_token_is_not():
    # 32 tokens, 400 train subjects: the planted event as 4 consecutive tokens of 8 events
    # (measured 0.884, uniform 4/32) is learnt; the one-token event of 32 (0.044, uniform
    # 1/32) is not: the sample-size wall a finer tokenisation of one event would not raise.
    def weight(events: int) -> dict:
        cfg = dataclasses.replace(MANY, ecg_tokens=32, ecg_events=events)
        return learn_match(probe_view(SyntheticCohort(cfg), 32), seed=0, steps=300)

    four, one = weight(8), weight(0)
    assert four["planted_weight"] > 0.5 > 0.2 > one["planted_weight"]
    assert four["test_mae"] < one["test_mae"]


def test_seeds_give_a_spread_and_are_reproducible():
    cfg = LearnerConfig(learner_seeds=2, learner_steps=60)
    one, two = (told_learner(SyntheticCohort(FEW), 32, cfg) for _ in range(2))
    assert one == two
    assert one["n_seeds"] == 2 and one["uniform"] == pytest.approx(1 / 8)
    ws = [one["seeds"][f"r{k}"]["planted_weight"] for k in range(2)]
    assert one["planted_weight_mean"] == pytest.approx(np.mean(ws))
    assert one["planted_weight_min"] <= one["planted_weight_max"]


def test_bad_learner_params_name_the_key():
    with pytest.raises(ParamsError, match="planted_ceiling.learner_steps"):
        parse(LearnerConfig, {"learner_steps": 5}, "planted_ceiling")
    with pytest.raises(ParamsError, match="planted_ceiling.learner_seeds"):
        parse(LearnerConfig, {"learner_seeds": -1}, "planted_ceiling")
    with pytest.raises(ValueError, match="no planted token"):
        probe_view(SyntheticCohort(dataclasses.replace(FEW, ecg_tokens=1)), 32)


def test_without_a_pca_the_view_is_the_standardized_embedding_of_each_width():
    # The tiny pipeline's geometry: echo 32-d, ECG 24-d, train.pca_rank 32 (not below either
    # width): no principal directions, each modality its own width.
    tiny = dataclasses.replace(FEW, echo_dim=32, ecg_dim=24, ecg_tokens=3)
    view = probe_view(SyntheticCohort(tiny), pca_rank=32)
    assert view.clips.shape[-1] == 32 and view.tokens.shape[-1] == 24
    assert view.echo_codes.shape == (32, 2) and view.ecg_codes.shape == (24, 2)
    got = learn_match(view, seed=0, steps=20)
    assert 0.0 <= got["planted_weight"] <= 1.0 and np.isfinite(got["test_mae"])
