"""One suite for every registered probe, the way scikit-learn's ``check_estimator`` runs on
every estimator: its spec is typed, its textbook module follows
:class:`~rightsize.probes.engine.fitted.TextbookModule`, and its fit (two seed replicas)
hands back :class:`~rightsize.probes.engine.fitted.FittedModel` instances that predict, repeat bit
for bit and survive a checkpoint round trip. The four built-in probes and a fifth one
(``fifth_probe.py``, registered here the documented way) all run it."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
import torch

from rightsize.probe_registry import PROBES
from rightsize.probes.engine.build import build_module
from rightsize.probes.engine.checkpoint import load_checkpoint, save_checkpoint
from rightsize.probes.engine.data import split_data
from rightsize.probes.engine.estimator import Estimator
from rightsize.probes.engine.fitted import FittedModel, TextbookModule
from rightsize.probes.registry import SPECS, register, spec, unregister

from . import fifth_probe
from .probe_fixtures import small_train_config

EVERY = (*PROBES, fifth_probe.SPEC.name)


@pytest.fixture(scope="module", autouse=True)
def fifth():
    """The fifth probe, registered for this module only."""
    register(fifth_probe.SPEC)
    yield
    unregister(fifth_probe.SPEC.name)


def _cfg():
    cfg = small_train_config(epochs=3)
    return dataclasses.replace(cfg, seeds=2, echo=dataclasses.replace(cfg.echo, epochs=3),
                               concat=dataclasses.replace(cfg.concat, epochs=3))


@pytest.fixture(scope="module")
def fits(cohort):
    """Every probe fitted once (two replicas) and once more, to check it repeats."""
    train, val = split_data(cohort, "train"), split_data(cohort, "val")
    return {name: [Estimator(name, _cfg()).fit(train, val, [0, 1]) for _ in range(2)]
            for name in EVERY}


def test_every_registered_probe_runs_this_suite():
    assert set(SPECS) == set(EVERY)


@pytest.mark.parametrize("name", EVERY)
def test_the_spec_is_typed(name):
    s = spec(name)
    assert s.name == name and dataclasses.is_dataclass(s.config)
    assert (s.model is None) != (s.closed_form is None)       # a module or a closed form
    assert s.defaults() == dataclasses.asdict(s.config())
    assert s.ef_score in ("neg_lvef", "logit")
    for load in s.accelerators:
        acc = load()
        assert acc.name and acc.precondition and callable(acc.trainer)


@pytest.mark.parametrize("name", [n for n in EVERY if n != "ecg"])
def test_the_textbook_module_follows_the_protocol(name, fits, cohort):
    fit = fits[name][0][0]
    module = build_module(name, fit.arch)
    assert isinstance(module, TextbookModule) and isinstance(module, torch.nn.Module)
    rows = split_data(cohort, "val").subset(np.arange(9))
    t = rows.tensors()
    module.eval()
    with torch.no_grad():
        torch.testing.assert_close(module(**t), module.forward_encoded(**module.encode(**t)))


@pytest.mark.parametrize("name", EVERY)
def test_fits_are_fitted_models_that_repeat_and_round_trip(name, fits, cohort, tmp_path):
    first, again = fits[name]
    test = split_data(cohort, "test")
    assert len(first) == 2
    for a, b in zip(first, again, strict=True):
        assert isinstance(a.probe.model, FittedModel)
        lvef, score = a.probe.predict(test)
        assert np.isfinite(lvef).all() and np.isfinite(score).all()
        np.testing.assert_array_equal(lvef, b.probe.predict(test)[0])      # bit for bit
        assert a.best_epoch >= 1 and a.probe.n_params > 0
    save_checkpoint(tmp_path, first[0].probe, first[0].arch, {})
    loaded, _ = load_checkpoint(tmp_path, name)
    np.testing.assert_array_equal(loaded.predict(test)[0], first[0].probe.predict(test)[0])
