"""The training loop's executed FLOPs and its rate beside the machine's GEMM rate.

The count (:mod:`rightsize.probes.engine.flops`) is one step per batch size and one
validation pass, scaled by replicas and epochs. Its oracle is torch's FLOP counter held
around the whole real loop (every step of every replica, every validation pass), with the
oneDNN route off so the counter sees every product: the two must agree exactly, for an
accelerated probe, the stacked concat replicas and the textbook trainer alike.
"""

from __future__ import annotations

import dataclasses

import pytest
from torch.utils.flop_counter import FlopCounterMode

from rightsize.probes.accel import gemm
from rightsize.probes.engine import estimator
from rightsize.probes.engine.data import split_data
from rightsize.probes.engine.estimator import Estimator
from rightsize.probes.engine.flops import step_sizes
from rightsize.probes.measurements.throughput import gemm_rate, product_gflops, throughput
from rightsize.probes.registry import spec

from .probe_fixtures import with_ecg_tokens


@pytest.fixture(autouse=True)
def own_cache(monkeypatch, tmp_path):
    """Counts kept in this test's own cache folder."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    return tmp_path / "cache" / "rightsize"


def whole_loop_flops(monkeypatch, name, arrays, cfg, seeds):
    """The fits, and the FLOPs torch's counter saw over the whole real loop."""
    seen = {}
    real_loop = estimator.train_loop

    def counted_loop(*args, **kw):
        with FlopCounterMode(display=False) as counter:
            out = real_loop(*args, **kw)
        seen["fit"] = float(counter.get_total_flops())
        return out

    monkeypatch.setattr(estimator, "train_loop", counted_loop)
    before = gemm.set_onednn(False)
    try:
        fits = Estimator(spec(name), cfg).fit(split_data(arrays, "train"),
                                              split_data(arrays, "val"), seeds,
                                              count_flops=True)
    finally:
        gemm.set_onednn(before)
    return fits, seen["fit"]


@pytest.mark.parametrize("name,accelerate,tokens", [
    ("fused", True, 0), ("fused", False, 0), ("concat", True, 0), ("fused", True, 5)])
def test_count_equals_the_counter_around_the_whole_loop(monkeypatch, cohort, train_cfg,
                                                         name, accelerate, tokens):
    arrays = with_ecg_tokens(cohort, tokens) if tokens else cohort
    cfg = dataclasses.replace(train_cfg, accelerate=accelerate, batch_size=64)
    assert len(split_data(arrays, "train")) % 64            # a last, shorter batch too
    fits, oracle = whole_loop_flops(monkeypatch, name, arrays, cfg, [0, 1, 2])
    flops = fits[0].flops
    assert flops is not None and oracle > 0
    assert flops["fit"] == oracle
    assert (fits[0].extra["accelerator"] == "none") == (not accelerate)
    assert flops["loop_s"] > 0


def test_a_count_is_kept_and_read_back_under_its_key(monkeypatch, own_cache, cohort,
                                                      train_cfg):
    from rightsize.probes.engine import flops as flops_mod

    train, val = split_data(cohort, "train"), split_data(cohort, "val")
    first = Estimator(spec("fused"), train_cfg).fit(train, val, [0], count_flops=True)[0]
    assert first.flops["source"] == "counted now"
    assert len(list(own_cache.glob("flops-*.json"))) == 1

    def no_count(*args, **kw):
        raise AssertionError("counted again")

    monkeypatch.setattr(flops_mod, "_count", no_count)
    again = Estimator(spec("fused"), train_cfg).fit(train, val, [0, 1], count_flops=True)[0]
    assert again.flops["source"].startswith("counted earlier")
    assert again.flops["fit"] == 2 * first.flops["fit"]          # two replicas
    other = dataclasses.replace(train_cfg, batch_size=train_cfg.batch_size // 2)
    missed = Estimator(spec("fused"), other).fit(train, val, [0], count_flops=True)[0]
    assert missed.flops is None                                   # a new key counts again


def test_the_key_changes_with_the_code(monkeypatch, tmp_path, cohort, train_cfg):
    """The key hashes the probes package's source: a copy with one file touched keys apart."""
    import shutil

    import rightsize.probes
    from rightsize.probes.engine import flops as flops_mod
    from rightsize.probes.engine.torch_replicas import textbook_trainer

    est = Estimator(spec("fused"), train_cfg)
    job = types_job(est, cohort)
    key = flops_mod.count_key(textbook_trainer, job, 64)
    assert key == flops_mod.count_key(textbook_trainer, job, 64)
    assert key != flops_mod.count_key(textbook_trainer, job, 32)
    copy = tmp_path / "probes"
    shutil.copytree(rightsize.probes.__path__[0], copy)
    (copy / "models" / "fused" / "step.py").write_text(
        (copy / "models" / "fused" / "step.py").read_text() + "\n# touched\n")
    monkeypatch.setattr(rightsize.probes, "__file__", str(copy / "__init__.py"))
    assert flops_mod.count_key(textbook_trainer, job, 64) != key


def types_job(est, arrays):
    """A FitJob for ``est`` on ``arrays`` as the estimator builds it."""
    from rightsize.probes.engine.data import Moments, Standardizer
    from rightsize.probes.engine.estimator import FitJob

    train, val = split_data(arrays, "train"), split_data(arrays, "val")
    arch = est.arch(train)
    return FitJob(est.name, arch, est.cfg, est.config_for(arch["ecg_tokens"]), train, val,
                  Standardizer.fit(train.lvef), Moments.fit(train, est.cfg.pca_rank), [0],
                  "cpu", est.build)


def test_counting_leaves_the_trained_replicas_unchanged(cohort, train_cfg):
    train, val = split_data(cohort, "train"), split_data(cohort, "val")
    plain = Estimator(spec("fused"), train_cfg).fit(train, val, [0, 1])
    counted = Estimator(spec("fused"), train_cfg).fit(train, val, [0, 1], count_flops=True)
    for a, b in zip(plain, counted, strict=True):
        assert a.val_loss == b.val_loss and a.train_loss == b.train_loss
    assert plain[0].flops is None


def test_numpy_probes_are_not_counted(cohort, train_cfg):
    train, val = split_data(cohort, "train"), split_data(cohort, "val")
    for name in ("ecg", "echo"):
        fits = Estimator(spec(name), train_cfg).fit(train, val, [0], count_flops=True)
        assert fits[0].flops is None


def test_step_sizes_cover_the_rows():
    assert step_sizes(100, 32) == [(32, 3), (4, 1)]
    assert step_sizes(64, 32) == [(32, 2)]
    assert step_sizes(5, 32) == [(5, 1)]


def test_gemm_rate_and_the_share():
    rate = gemm_rate(1, size=256)
    assert rate["route"] in ("onednn", "mkl") and rate["shape"] == [256, 256, 256]
    assert rate["route_words"].startswith(rate["route"])
    assert rate["gflops"] > 0.5
    assert product_gflops(64, 64, 64, 1, "mkl", min_s=0.01) > 0
    t = throughput({"fit": 4e9, "loop_s": 2.0}, 1)
    assert t["gflops"] == pytest.approx(2.0)
    assert t["share_of_gemm"] == pytest.approx(2.0 / t["gemm"]["gflops"])
