"""Every probe takes a subject's ECG as N tokens (``CohortArrays.ecg`` (n, N, ecg_dim)).

ecg and concat read the mean of the tokens; the fused probe's echo->ECG attention runs over
``[null, ECG tokens]`` and its ECG->echo query is the mean token; echo reads no ECG. At
N = 1 nothing changes. A checkpoint records N, and one trained at N evaluated against a
manifest of M != N tokens is an error naming both.
"""

from __future__ import annotations

import dataclasses
import json

import numpy as np
import pytest
import torch
import yaml

from rightsize.cli import main
from rightsize.errors import InputError
from rightsize.probe_names import PROBES
from rightsize.probes.engine.data import Moments, split_data
from rightsize.probes.engine.estimator import check_inputs
from rightsize.probes.engine.train import train_probe
from rightsize.probes.registry import spec as probe_spec

from .probe_fixtures import (
    make_cohort,
    makers,
    probe_inputs,
    randomized,
    small_manifest,
    small_train_config,
    with_ecg_tokens,
)
from .test_probes_cli import EVALUATE, TRAIN

N = 4


@pytest.fixture(scope="module")
def token_cohort():
    return with_ecg_tokens(make_cohort(n=300, splits=(200, 40, 60)), N)


@pytest.fixture(scope="module")
def token_fits(token_cohort):
    cfg = small_train_config(epochs=6)
    cfg = dataclasses.replace(cfg, echo=dataclasses.replace(cfg.echo, epochs=6),
                              concat=dataclasses.replace(cfg.concat, epochs=6), pca_rank=8)
    return {name: train_probe(probe_spec(name), token_cohort, cfg) for name in
            PROBES}


def test_every_probe_trains_on_ecg_tokens_and_records_them(token_cohort, token_fits):
    test = split_data(token_cohort, "test")
    accelerators = {"echo": "echo_numpy", "concat": "concat_stacked", "fused": "fused_tokens"}
    for name, fit in token_fits.items():
        assert fit.arch["ecg_tokens"] == N, name
        assert np.isfinite(fit.probe.predict(test)[0]).all(), name
        if name in accelerators:
            assert fit.extra["accelerator"] == accelerators[name], name
    assert token_fits["ecg"].arch["ecg_pooling"] == token_fits["concat"].arch[
        "ecg_pooling"] == "mean"


@pytest.mark.parametrize("name", ["ecg", "concat"])
def test_ecg_and_concat_read_the_mean_token(token_cohort, token_fits, name):
    pooled = dataclasses.replace(token_cohort, ecg=token_cohort.ecg.mean(axis=1))
    val_t, val_p = split_data(token_cohort, "val"), split_data(pooled, "val")
    probe = token_fits[name].probe
    np.testing.assert_allclose(probe.predict(val_t)[0], probe.predict(val_p)[0], rtol=1e-5)


def test_fused_attends_over_null_and_every_ecg_token(token_cohort, token_fits):
    test = split_data(token_cohort, "test")
    w_e, w_g = token_fits["fused"].probe.model.attention(test)
    assert w_e.shape == (len(test), 2, test.clip_mask.shape[1], 1 + N)
    assert w_g.shape == (len(test), 2, 1, 1 + test.clip_mask.shape[1])
    torch.testing.assert_close(w_e.sum(-1), torch.ones_like(w_e.sum(-1)))
    no_ecg = ~torch.from_numpy(test.has_ecg)
    assert (w_e[no_ecg][..., 1:] == 0).all() and (w_e[~no_ecg][..., 1:] > 0).all()
    ent = token_fits["fused"].probe.attention_entropy(test)
    assert ent["echo_to_ecg"] <= ent["echo_to_ecg_max"] + 1e-9
    assert ent["echo_to_ecg_max"] > np.log(2)          # more than [null, ECG] now


def test_fused_is_invariant_to_the_order_of_ecg_tokens():
    model = randomized(makers()["fused"], 8).eval()
    x = probe_inputs(5, 14, tokens=N)
    perm = torch.tensor([2, 0, 3, 1])
    out = model(*x)
    again = model(x[0], x[1], x[2][:, perm], x[3])
    torch.testing.assert_close(again, out, rtol=1e-10, atol=1e-12)


def test_token_accelerator_and_textbook_train_the_same_model(token_cohort):
    cfg = small_train_config(epochs=4)
    on = train_probe(probe_spec("fused"), token_cohort, cfg)
    off = train_probe(probe_spec("fused"), token_cohort, dataclasses.replace(cfg, accelerate=False))
    assert (on.extra["accelerator"], off.extra["accelerator"]) == ("fused_tokens", "none")
    np.testing.assert_allclose(on.val_loss, off.val_loss, rtol=1e-4)   # float32 rounding


def test_one_token_is_the_pooled_model_exactly():
    pooled = make_cohort(n=300, splits=(200, 40, 60))
    one = dataclasses.replace(pooled, ecg=pooled.ecg[:, None, :])
    cfg = small_train_config(epochs=3)
    a, b = train_probe(probe_spec("fused"), pooled, cfg), train_probe(probe_spec("fused"), one, cfg)
    assert a.val_loss == b.val_loss and b.arch["ecg_tokens"] == 1
    assert b.extra["accelerator"] == "fused_pooled"


def test_moments_take_every_token_as_a_row(token_cohort):
    train = split_data(token_cohort, "train")
    m = Moments.fit(train, 8)
    rows = train.ecg[train.has_ecg].reshape(-1, train.ecg.shape[-1])
    np.testing.assert_allclose(m.ecg_mean, rows.mean(axis=0, dtype=np.float64), rtol=1e-6)
    assert m.ecg_basis.shape == (train.ecg.shape[-1], 8)


def test_a_checkpoint_at_n_tokens_against_a_manifest_of_m_is_an_error(token_cohort):
    arch = {"echo_dim": 64, "ecg_dim": 48, "ecg_tokens": 16}
    with pytest.raises(InputError, match=r"trained at 16 ECG token.*has 4"):
        check_inputs(arch, token_cohort, "models/fused", "data/manifest.parquet")
    check_inputs({**arch, "ecg_tokens": N}, token_cohort, "models/fused", "m.parquet")
    check_inputs({"echo_dim": 64, "ecg_dim": 48}, make_cohort(n=300, splits=(200, 40, 60)),
                 "an older checkpoint: pooled", "m.parquet")


@pytest.mark.parametrize("verb", ["evaluate", "missing-modality"])
def test_cli_refuses_a_checkpoint_of_other_ecg_tokens_naming_both(tmp_path, capsys, verb):
    small_manifest(tmp_path)
    (tmp_path / "params.yaml").write_text(yaml.safe_dump({"train": TRAIN, "evaluate": EVALUATE}))
    common = ["--params", str(tmp_path / "params.yaml"), "--manifest",
              str(tmp_path / "manifest.parquet"), "-q"]
    assert main(["train", "concat", *common, "--out", str(tmp_path / "m")]) == 0
    side = tmp_path / "m" / "checkpoint.json"
    doc = json.loads(side.read_text())
    assert doc["arch"]["ecg_tokens"] == 1
    doc["arch"]["ecg_tokens"] = 16                 # as if trained on a 16-token manifest
    side.write_text(json.dumps(doc))
    from rightsize.probes.engine.integrity import record_contents

    record_contents(tmp_path / "m")                # sealed: the hash check passes
    capsys.readouterr()
    rc = main([verb, "concat", *common, "--model", str(tmp_path / "m"),
               "--json", str(tmp_path / "out.json")])
    err = capsys.readouterr().err.strip()
    assert rc == 2 and "\n" not in err
    assert "16 ECG token" in err and "has 1" in err and "manifest.parquet" in err
    assert not (tmp_path / "out.json").exists()


def test_a_token_level_checkpoint_reloads_to_the_same_predictions(token_cohort, token_fits,
                                                                  tmp_path):
    from rightsize.probes.engine.checkpoint import load_checkpoint, save_checkpoint

    fit = token_fits["fused"]
    save_checkpoint(tmp_path, fit.probe, fit.arch, {})
    probe, side = load_checkpoint(tmp_path, "fused")
    assert side["arch"]["ecg_tokens"] == N and probe.model.forward is not None
    test = split_data(token_cohort, "test")
    np.testing.assert_array_equal(probe.predict(test)[0], fit.probe.predict(test)[0])
