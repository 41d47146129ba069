"""Checkpoints: no pickled code, and a reload reproduces the test metrics exactly."""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch

from rightsize.errors import DataError, InputError
from rightsize.probe_names import PROBES
from rightsize.probes.engine.checkpoint import (
    SIDECAR,
    checkpoint_bytes,
    load_checkpoint,
    read_sidecar,
    save_checkpoint,
)
from rightsize.probes.engine.data import split_data
from rightsize.probes.evaluation.evaluate import score_split


@pytest.mark.parametrize("name", PROBES)
def test_reload_reproduces_test_metrics_exactly(fits, cohort, tmp_path, name):
    fit = fits[name][0]
    save_checkpoint(tmp_path, fit.probe, fit.arch, {"best_epoch": fit.best_epoch})
    probe, side = load_checkpoint(tmp_path, name)
    test = split_data(cohort, "test")
    before = fit.probe.predict(test)
    after = probe.predict(test)
    np.testing.assert_array_equal(before[0], after[0])
    np.testing.assert_array_equal(before[1], after[1])
    assert score_split(fit.probe, test, 200, 0, 0.95)[0] == score_split(probe, test, 200, 0,
                                                                         0.95)[0]
    assert side["params"] == fit.probe.n_params and side["best_epoch"] == fit.best_epoch
    assert side["standardization"] == {"mean": fit.probe.std.mean, "sd": fit.probe.std.sd}
    assert checkpoint_bytes(tmp_path) > 0


def test_weights_hold_only_plain_tensors_and_arrays(fits, tmp_path):
    fused = fits["fused"][0]
    save_checkpoint(tmp_path / "fused", fused.probe, fused.arch, {})
    from safetensors.torch import load_file

    state = load_file(tmp_path / "fused" / "weights.safetensors")    # tensors only, by format
    assert state and all(isinstance(v, torch.Tensor) for v in state.values())
    assert set(state) == set(fused.probe.model.module.state_dict())
    ecg = fits["ecg"][0]
    save_checkpoint(tmp_path / "ecg", ecg.probe, ecg.arch, {})
    with np.load(tmp_path / "ecg" / "weights.npz", allow_pickle=False) as npz:
        assert set(npz.files) >= {"coef_lvef", "intercept_lvef", "coef_ef40", "x_mean"}
        assert all(npz[k].dtype == np.float64 for k in npz.files)
    side = json.loads((tmp_path / "ecg" / SIDECAR).read_text())
    assert side["weights"] == "weights.npz" and side["ef_score"] == "logit"


def test_resave_of_another_kind_removes_the_stale_weights(fits, tmp_path):
    save_checkpoint(tmp_path, fits["echo"][0].probe, fits["echo"][0].arch, {})
    save_checkpoint(tmp_path, fits["ecg"][0].probe, fits["ecg"][0].arch, {})
    assert sorted(p.name for p in tmp_path.iterdir()) == ["checkpoint.json", "weights.npz"]


def test_load_errors_name_the_file(fits, tmp_path):
    with pytest.raises(InputError, match="model directory not found"):
        load_checkpoint(tmp_path / "nope")
    with pytest.raises(InputError, match="checkpoint.json"):
        load_checkpoint(tmp_path)
    fit = fits["concat"][0]
    save_checkpoint(tmp_path, fit.probe, fit.arch, {})
    with pytest.raises(InputError, match="holds probe 'concat', not 'fused'"):
        read_sidecar(tmp_path, "fused")
    (tmp_path / "weights.safetensors").unlink()
    with pytest.raises(InputError, match="weights.safetensors"):
        load_checkpoint(tmp_path, "concat")
    (tmp_path / "weights.safetensors").write_bytes(b"not a safetensors file")
    with pytest.raises(DataError, match="weights.safetensors"):
        load_checkpoint(tmp_path, "concat")
    echo = fits["echo"][0]                         # numpy probe: weights.npz
    save_checkpoint(tmp_path / "echo", echo.probe, echo.arch, {})
    assert not (tmp_path / "echo" / "weights.safetensors").exists()
    (tmp_path / "echo" / "weights.npz").unlink()
    with pytest.raises(InputError, match="weights.npz"):
        load_checkpoint(tmp_path / "echo", "echo")
    (tmp_path / "echo" / "weights.npz").write_bytes(b"not a zip file")
    with pytest.raises(DataError, match="weights.npz"):
        load_checkpoint(tmp_path / "echo", "echo")
    (tmp_path / SIDECAR).write_text("{not json")
    with pytest.raises(DataError, match="not valid JSON"):
        load_checkpoint(tmp_path, "concat")


@pytest.mark.parametrize("accelerate", [True, False])
def test_the_weights_file_follows_the_model_the_trainer_made(cohort, tmp_path, accelerate):
    """The echo probe's accelerator trains numpy arrays (weights.npz), its textbook trainer a
    torch module (weights.safetensors): each checkpoint names its file and reloads to the same
    predictions, whatever the other kind left in the folder."""
    import dataclasses

    from rightsize.probes.engine.train import train_probe
    from rightsize.probes.registry import spec as probe_spec

    from .probe_fixtures import small_train_config

    cfg = dataclasses.replace(small_train_config(epochs=3), accelerate=accelerate)
    fit = train_probe(probe_spec("echo"), cohort, dataclasses.replace(cfg, echo=dataclasses.replace(
        cfg.echo, epochs=3)))
    side = save_checkpoint(tmp_path, fit.probe, fit.arch, {})
    assert side["weights"] == ("weights.npz" if accelerate else "weights.safetensors")
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(["checkpoint.json",
                                                                 side["weights"]])
    probe, _ = load_checkpoint(tmp_path, "echo", accelerate=accelerate)
    val = split_data(cohort, "val")
    np.testing.assert_array_equal(probe.predict(val)[0], fit.probe.predict(val)[0])
