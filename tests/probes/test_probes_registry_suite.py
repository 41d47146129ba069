"""One suite for every registered probe, the way scikit-learn's ``check_estimator`` runs on
every estimator: :func:`rightsize.probes.checks.check_probe` (its spec is typed, its textbook
module follows the protocol, its two-replica fit predicts, repeats bit for bit and survives a
checkpoint round trip). The four built-in probes and a fifth one (``fifth_probe.py``,
registered here the documented way) all pass it; deliberately broken copies of the fifth do
not."""

from __future__ import annotations

import dataclasses

import pytest

from rightsize.probe_names import PROBES
from rightsize.probes.checks import ProbeCheckError, check_probe, small_config
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
    return small_config(small_train_config(epochs=3))


def test_every_registered_probe_runs_this_suite():
    assert set(SPECS) == set(EVERY)


@pytest.mark.parametrize("name", EVERY)
def test_every_registered_probe_passes_check_probe(name, cohort):
    check_probe(spec(name), cohort, _cfg())
    assert SPECS[name] is spec(name)                # a registered probe stays registered


def _broken_forward():
    """The fifth probe's textbook class with a ``forward`` that no longer equals
    ``forward_encoded(**encode(...))``."""
    base = fifth_probe.textbook()["EchoLinearProbe"]

    class Broken(base):
        def forward(self, echo, clip_mask, ecg, has_ecg):
            return super().forward(echo, clip_mask, ecg, has_ecg) + 1.0

    return Broken


def test_check_probe_rejects_a_broken_forward(cohort):
    broken = dataclasses.replace(fifth_probe.SPEC, name="broken_forward",
                                 model=_broken_forward)
    with pytest.raises(ProbeCheckError, match="broken_forward.*forward differs"):
        check_probe(broken, cohort, _cfg())
    assert "broken_forward" not in SPECS              # registered for the checks only


def test_check_probe_rejects_an_untyped_spec():
    both = dataclasses.replace(fifth_probe.SPEC, name="both", closed_form=lambda: None)
    with pytest.raises(ProbeCheckError, match="exactly one of model"):
        check_probe(both)
    bad_score = dataclasses.replace(fifth_probe.SPEC, name="bad_score", ef_score="prob")
    with pytest.raises(ProbeCheckError, match="ef_score"):
        check_probe(bad_score)
