"""Checks every probe passes, the way scikit-learn's ``check_estimator`` checks an estimator:
:func:`check_probe` runs them on one :class:`~rightsize.probes.spec.ProbeSpec`, so a new
probe tests itself (tests/probes/test_probes_registry_suite.py calls it for every registered
probe and for a deliberately broken copy, which it must reject).

The checks: the spec is typed; its textbook module (if it has one) follows
:class:`~rightsize.probes.engine.fitted.TextbookModule`; its fit (two seed replicas) hands
back :class:`~rightsize.probes.engine.fitted.FittedModel` instances that predict finite
values, repeat bit for bit and survive a checkpoint round trip. A failed check raises
:class:`ProbeCheckError` naming the probe and the check.
"""

from __future__ import annotations

import dataclasses
import tempfile
from typing import Any

import numpy as np

from rightsize.probes.engine.config import TrainConfig
from rightsize.probes.spec import ProbeSpec


class ProbeCheckError(AssertionError):
    """A probe failed one of :func:`check_probe`'s checks."""


def _require(ok: bool, probe: str, what: str) -> None:
    if not ok:
        raise ProbeCheckError(f"probe {probe!r}: {what}")


def small_config(cfg: TrainConfig | None = None, epochs: int = 3) -> TrainConfig:
    """``cfg`` (default: the defaults at 1 thread, batch 32, lr 3e-3) with two replicas and
    every probe block that has epochs cut to ``epochs``."""
    cfg = cfg or TrainConfig(threads=1, batch_size=32, lr=3e-3)
    blocks = {f.name: getattr(cfg, f.name) for f in dataclasses.fields(cfg)
              if dataclasses.is_dataclass(getattr(cfg, f.name))
              and hasattr(getattr(cfg, f.name), "epochs")}
    return dataclasses.replace(cfg, seeds=2, **{name: dataclasses.replace(b, epochs=epochs)
                                                 for name, b in blocks.items()})


def small_cohort() -> Any:
    """A 240-subject synthetic cohort (3 clips, 32-d echo, 24-d ECG), built in a temp folder."""
    from rightsize.cohort.build import build_manifest
    from rightsize.cohort.config import CohortConfig, SplitsConfig
    from rightsize.cohort.load_manifest import load_arrays

    cfg = CohortConfig(n_subjects=240, splits=SplitsConfig(160, 30, 50), echo_dim=32,
                       ecg_dim=24, max_clips=3, row_group_size=64)
    with tempfile.TemporaryDirectory() as tmp:
        build_manifest(cfg, f"{tmp}/manifest.parquet")
        return load_arrays(f"{tmp}/manifest.parquet")


def check_spec(probe: ProbeSpec) -> None:
    """The spec is typed: a config dataclass, a module or a closed form, declared
    accelerators that load."""
    name = probe.name
    _require(dataclasses.is_dataclass(probe.config), name, "config is not a dataclass")
    _require((probe.model is None) != (probe.closed_form is None), name,
             "needs exactly one of model (a textbook module) and closed_form")
    _require(probe.defaults() == dataclasses.asdict(probe.config()), name,
             "defaults() differ from the config's fields")
    _require(probe.ef_score in ("neg_lvef", "logit"), name,
             f"ef_score {probe.ef_score!r} is not 'neg_lvef' or 'logit'")
    for load in probe.accelerators:
        acc = load()
        _require(bool(acc.name and acc.precondition) and callable(acc.trainer), name,
                 f"accelerator {acc!r} lacks a name, precondition or trainer")


def check_textbook_module(probe: ProbeSpec, arch: dict[str, Any], arrays: Any) -> None:
    """The textbook module built for ``arch`` is a torch module following the
    ``TextbookModule`` protocol: ``forward`` equals ``forward_encoded(**encode(...))``."""
    import torch

    from rightsize.probes.engine.build import build_module
    from rightsize.probes.engine.data import split_data
    from rightsize.probes.engine.fitted import TextbookModule

    module = build_module(probe, arch)
    _require(isinstance(module, TextbookModule) and isinstance(module, torch.nn.Module),
             probe.name, "textbook module does not follow TextbookModule")
    t = split_data(arrays, "val").subset(np.arange(9)).tensors()
    module.eval()
    with torch.no_grad():
        a, b = module(**t), module.forward_encoded(**module.encode(**t))
    _require(bool(torch.allclose(a, b, rtol=1.3e-6, atol=1e-5)), probe.name,
             "forward differs from forward_encoded(**encode(...))")


def check_fits(probe: ProbeSpec, first: list[Any], again: list[Any], arrays: Any) -> None:
    """Two fits of the same replicas: fitted models that predict finite values, repeat bit
    for bit and survive a checkpoint round trip."""
    from rightsize.probes.engine.checkpoint import load_checkpoint, save_checkpoint
    from rightsize.probes.engine.data import split_data
    from rightsize.probes.engine.fitted import FittedModel

    name = probe.name
    test = split_data(arrays, "test")
    _require(len(first) == len(again) == 2, name, "two seeds did not give two replicas")
    for a, b in zip(first, again, strict=True):
        _require(isinstance(a.probe.model, FittedModel), name, "fit is not a FittedModel")
        lvef, score = a.probe.predict(test)
        _require(bool(np.isfinite(lvef).all() and np.isfinite(score).all()), name,
                 "predictions are not finite")
        _require(np.array_equal(lvef, b.probe.predict(test)[0]), name,
                 "a second fit of the same seed predicts other bits")
        _require(a.best_epoch >= 1 and a.probe.n_params > 0, name,
                 "best_epoch < 1 or no parameters")
    with tempfile.TemporaryDirectory() as tmp:
        save_checkpoint(tmp, first[0].probe, first[0].arch, {})
        loaded, _ = load_checkpoint(tmp, name)
        _require(np.array_equal(loaded.predict(test)[0], first[0].probe.predict(test)[0]),
                 name, "the checkpoint round trip changes the predictions")


def check_probe(probe: ProbeSpec, arrays: Any = None, cfg: TrainConfig | None = None) -> None:
    """Run every check on ``probe`` with cohort ``arrays`` (default :func:`small_cohort`) and
    train config ``cfg`` (default :func:`small_config`); ``ProbeCheckError`` on the first
    that fails. ``probe`` is registered for the checks if it is not (and removed after)."""
    from rightsize.probes.engine.data import split_data
    from rightsize.probes.engine.estimator import Estimator
    from rightsize.probes.registry import SPECS, register, unregister

    check_spec(probe)
    arrays = small_cohort() if arrays is None else arrays
    cfg = small_config() if cfg is None else cfg
    added = SPECS.get(probe.name) is not probe
    if added:
        _require(probe.name not in SPECS, probe.name, "another probe has this name")
        register(probe)
    try:
        train, val = split_data(arrays, "train"), split_data(arrays, "val")
        first, again = (Estimator(probe, cfg).fit(train, val, [0, 1]) for _ in range(2))
        if probe.model is not None:
            check_textbook_module(probe, first[0].arch, arrays)
        check_fits(probe, first, again, arrays)
    finally:
        if added:
            unregister(probe.name)
