"""The fused probe's echo->ECG attention on the planted ECG token (``attention.echo_to_ecg``).

The synthetic cohort at ``ecg_tokens = N > 1`` plants one token per subject and records it
in the truth file; :mod:`rightsize.probes.evaluation.planted` scores each head's mean weight on it.
Here: the arithmetic on weights we choose, a small real cohort on which the trained probe
attends to the planted token well above uniform (and not to a wrong token), and the verbs'
``--truth`` (keys written for the fused probe only, nothing without planted tokens, a truth
file of another token count refused naming both files).
"""

from __future__ import annotations

import dataclasses
import json
from types import SimpleNamespace

import numpy as np
import pytest
import torch
import yaml

from rightsize.cli import main
from rightsize.cohort.build import build_manifest
from rightsize.cohort.config import CohortConfig, SplitsConfig
from rightsize.cohort.load_manifest import load_arrays
from rightsize.cohort.planted_tokens import planted_mask
from rightsize.cohort.truth import load_truth
from rightsize.probes.engine.data import SplitData, split_data
from rightsize.probes.engine.predict import Probe
from rightsize.probes.engine.train import train_seeds
from rightsize.probes.evaluation.planted import (
    FOUND,
    HeadChoice,
    choose_head,
    planted_attention,
    planted_weights,
    val_chosen_head,
)
from rightsize.probes.registry import spec as probe_spec

from .probe_fixtures import EVALUATE, TRAIN, small_train_config

TOKENS = 4


class _Weights:
    """A model whose echo->ECG attention is the given (m, H, c, 1+N) array."""

    def __init__(self, w: np.ndarray) -> None:
        self.w = torch.from_numpy(w)

    def attention(self, data: SplitData):
        rows = [int(i) for i in data.lvef]          # the rows' indices ride in lvef
        return self.w[rows], None


def _rows(clip_mask: np.ndarray, has_ecg: np.ndarray) -> SplitData:
    m, c = clip_mask.shape
    return SplitData(np.zeros((m, c, 2), np.float32), clip_mask, np.zeros((m, 3, 2), np.float32),
                     has_ecg, np.arange(m, dtype=np.float64), np.zeros(m, bool))


def _one(first: list[int], tokens: int = 3) -> np.ndarray:
    """(m, tokens) bool: one-token events starting at ``first`` (-1: none)."""
    return planted_mask(np.array(first), tokens, tokens)


def test_weight_on_the_planted_token_is_averaged_over_present_clips_of_scored_rows():
    # 3 rows, 2 heads, 2 clips, keys [null, t0, t1, t2]
    w = np.zeros((3, 2, 2, 4))
    w[0, :, 0] = [0.1, 0.1, 0.7, 0.1]      # row 0 (t* = 1): clip 0 present, clip 1 absent
    w[0, :, 1] = [1.0, 0.0, 0.0, 0.0]
    w[1, 0] = [[0.0, 0.0, 0.0, 1.0], [0.5, 0.0, 0.0, 0.5]]     # row 1 (t* = 2), head 0
    w[1, 1] = [[0.25, 0.25, 0.25, 0.25], [0.25, 0.25, 0.25, 0.25]]
    w[2, :, :] = [0.0, 1.0, 0.0, 0.0]      # row 2: no ECG, not scored
    data = _rows(np.array([[True, False], [True, True], [True, True]]),
                 np.array([True, True, False]))
    probe = Probe("fused", _Weights(w), None)
    score = planted_weights(probe, data, _one([1, 2, 0]))
    # head 0: clips (0.7, 1.0, 0.5) -> 2.2 / 3; head 1: (0.7, 0.25, 0.25) -> 1.2 / 3
    np.testing.assert_allclose(score.heads, [2.2 / 3, 1.2 / 3])
    assert (score.tokens, score.n_subjects, score.n_clips) == (3, 2, 3)
    np.testing.assert_allclose(score.null, (0.1 + 0.0 + 0.5 + 0.1 + 0.25 + 0.25) / 6)
    # validation: rows 0 and 1 scored with heads swapped, so validation prefers head 1
    swapped = Probe("fused", _Weights(w[:, ::-1].copy()), None)
    node = planted_attention([probe, swapped], data, _one([1, 2, 0]), data, _one([1, 2, 0]))
    assert node["h0"] == pytest.approx(2.2 / 3) and node["best_head_val_index"] == 0
    assert node["r1"]["h1"] == pytest.approx(2.2 / 3) and node["r1"]["best_head_val_index"] == 1
    assert node["r1"]["best_head_val"] == node["best_head_val"]   # chosen per seed
    assert node["best_head_val_sd"] == 0.0 and node["uniform"] == pytest.approx(0.25)
    assert node["found_share"] == 1.0 and node["n_val_subjects"] == 2
    assert planted_weights(probe, data, _one([-1, -1, 0])) is None   # nothing planted


def test_the_head_is_chosen_on_validation_and_read_on_test():
    """Validation prefers head 1 (0.6 against 0.4); on test head 0 is larger (0.9 against
    0.3): the reported weight is head 1's test weight, 0.3, not the test split's best."""
    data = _rows(np.ones((1, 1), bool), np.ones(1, bool))
    val_w, test_w = np.zeros((1, 2, 1, 4)), np.zeros((1, 2, 1, 4))
    val_w[0, :, 0] = [[0.6, 0.0, 0.4, 0.0], [0.4, 0.0, 0.6, 0.0]]     # head 0: 0.4, head 1: 0.6
    test_w[0, :, 0] = [[0.1, 0.0, 0.9, 0.0], [0.7, 0.0, 0.3, 0.0]]    # head 0: 0.9, head 1: 0.3
    on_val = planted_weights(Probe("fused", _Weights(val_w), None), data, _one([1]))
    on_test = planted_weights(Probe("fused", _Weights(test_w), None), data, _one([1]))
    assert choose_head(on_val, on_test) == HeadChoice(1, pytest.approx(0.6), pytest.approx(0.3))
    assert choose_head(on_val, on_test).test_weight < FOUND       # not found, though head 0 is
    same = Probe("fused", _Weights(val_w), None)                   # one model, two splits
    assert val_chosen_head(same, data, _one([1]), data, _one([1])).index == 1
    assert val_chosen_head(same, data, _one([-1]), data, _one([1])) is None   # val: none


def test_weight_on_a_planted_event_sums_its_tokens():
    """Events of two tokens (4 tokens, 2 events): the weight on the event is the sum over
    its tokens, and uniform attention would put 2 / 5 there."""
    w = np.zeros((2, 1, 1, 5))
    w[0, 0, 0] = [0.1, 0.2, 0.3, 0.3, 0.1]      # row 0, event 1 (tokens 2, 3): 0.4
    w[1, 0, 0] = [0.0, 0.5, 0.4, 0.1, 0.0]      # row 1, event 0 (tokens 0, 1): 0.9
    mask = planted_mask(np.array([2, 0]), 4, 2)
    assert mask.tolist() == [[False, False, True, True], [True, True, False, False]]
    score = planted_weights(Probe("fused", _Weights(w), None),
                            _rows(np.ones((2, 1), bool), np.ones(2, bool)), mask)
    np.testing.assert_allclose(score.heads, [0.65])
    assert score.uniform == pytest.approx(2 / 5)


def test_a_probe_that_does_not_attend_has_no_planted_score():
    data = _rows(np.ones((2, 2), bool), np.ones(2, bool))
    assert planted_attention([Probe("concat", SimpleNamespace(), None)], data, _one([0, 1]),
                             data, _one([0, 1])) is None


@pytest.fixture(scope="module")
def planted_cohort(tmp_path_factory):
    """A 600-subject synthetic cohort (64-d echo, 48-d ECG, 4 clips) at 4 ECG tokens, its
    manifest and truth file on disk."""
    root = tmp_path_factory.mktemp("planted")
    cfg = CohortConfig(n_subjects=600, splits=SplitsConfig(420, 60, 120), echo_dim=64,
                       ecg_dim=48, max_clips=4, ecg_tokens=TOKENS)
    build_manifest(cfg, root / "manifest.parquet", truth=root / "truth.parquet")
    arrays = load_arrays(root / "manifest.parquet")
    truth = load_truth(root / "truth.parquet").aligned(arrays.subject_id)
    return root, arrays, truth.planted_mask()


def test_trained_fused_attention_finds_the_planted_token(planted_cohort):
    """3 seeds, 25 epochs: the head validation chose per seed puts most of each test clip's
    attention on the planted token (measured 0.82, 0.79, 0.75, the heads the test split
    would have picked too), where uniform is 0.2; scored on another token, the heads
    validation picks for it give it at most 0.12."""
    _, arrays, planted = planted_cohort
    cfg = dataclasses.replace(small_train_config(epochs=25), pca_rank=16, seeds=3)
    fits = train_seeds(probe_spec("fused"), arrays, cfg)
    val, test = split_data(arrays, "val"), split_data(arrays, "test")
    v, t = arrays.index("val"), arrays.index("test")
    node = planted_attention([f.probe for f in fits], val, planted[v], test, planted[t])
    assert node["uniform"] == pytest.approx(1 / (1 + TOKENS)) and node["ecg_tokens"] == TOKENS
    assert node["best_head_val_mean"] >= 3 * node["uniform"], node
    assert node["best_head_val_min"] >= 2 * node["uniform"], node
    wrong = np.roll(planted, 1, axis=1)                              # another token per row
    off = planted_attention([f.probe for f in fits], val, wrong[v], test, wrong[t])
    assert off["best_head_val_max"] < node["best_head_val_min"] / 2, off


def _cli(root, *args):
    params = root / "params.yaml"
    params.write_text(yaml.safe_dump({"train": TRAIN, "evaluate": EVALUATE}))
    return main([*args, "--params", str(params), "--manifest", str(root / "manifest.parquet"),
                 "-q"])


def test_train_and_evaluate_write_every_head_with_a_truth_file(planted_cohort, tmp_path):
    root = planted_cohort[0]
    truth = str(root / "truth.parquet")
    assert _cli(root, "train", "fused", "--out", str(tmp_path / "fused"), "--truth", truth,
                "--eval-json", str(tmp_path / "train_eval.json")) == 0
    ev = json.loads((tmp_path / "train_eval.json").read_text())
    node = ev["attention"]["echo_to_ecg"]
    assert sorted(k for k in node if k.startswith("h")) == ["h0", "h1"]    # TRAIN: 2 heads
    assert node["best_head_val"] == node[f"h{node['best_head_val_index']}"]
    assert all(isinstance(v, int | float) for k, v in node.items() if not k.startswith("r"))
    assert ev["ecg_tokens"] == TOKENS and ev["ecg_pooling"].startswith("attention")
    assert _cli(root, "evaluate", "fused", "--model", str(tmp_path / "fused"), "--truth", truth,
                "--json", str(tmp_path / "eval.json")) == 0
    again = json.loads((tmp_path / "eval.json").read_text())
    assert again["attention"] == ev["attention"]
    assert _cli(root, "train", "concat", "--out", str(tmp_path / "concat"), "--truth", truth,
                "--eval-json", str(tmp_path / "concat.json")) == 0
    concat = json.loads((tmp_path / "concat.json").read_text())
    assert "attention" not in concat and concat["ecg_pooling"] == "mean"


def test_a_truth_file_of_other_tokens_or_none_planted(planted_cohort, tmp_path, capsys):
    root = planted_cohort[0]
    assert _cli(root, "train", "fused", "--out", str(tmp_path / "fused")) == 0
    pooled = CohortConfig(n_subjects=600, splits=SplitsConfig(420, 60, 120), echo_dim=64,
                          ecg_dim=48, max_clips=4)
    build_manifest(pooled, tmp_path / "pooled.parquet", truth=tmp_path / "pooled_truth.parquet")
    other = dataclasses.replace(pooled, ecg_tokens=3)
    build_manifest(other, tmp_path / "m3.parquet", truth=tmp_path / "truth3.parquet")
    model = ["evaluate", "fused", "--model", str(tmp_path / "fused")]
    assert _cli(root, *model, "--truth", str(tmp_path / "truth3.parquet"),
                "--json", str(tmp_path / "e3.json")) == 2
    err = capsys.readouterr().err
    assert "truth3.parquet: planted at 3 ECG tokens" in err and "has 4" in err
    assert "manifest.parquet" in err and not (tmp_path / "e3.json").exists()
    assert _cli(root, *model, "--truth", str(tmp_path / "pooled_truth.parquet"),
                "--json", str(tmp_path / "e1.json")) == 0          # pooled truth: no tokens
    assert "attention" not in json.loads((tmp_path / "e1.json").read_text())
