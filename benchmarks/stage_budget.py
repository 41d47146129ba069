"""Where a probe stage's whole-process time goes: run one ``rightsize`` command, timed by phase.

Run as a child of ``probes_e2e_bench.py``::

    python benchmarks/stage_budget.py JSON_OUT [--os-exit] train fused --params params.yaml ...

It runs ``rightsize.cli.main`` on the remaining arguments, exactly as the console script
does, and attributes the in-process wall time to phases without changing the code it
measures: every top-level ``import`` is timed (``imports``), and the library functions a
stage calls are wrapped as soon as their module is imported (manifest load, input moments
and PCA, model build, training, evaluation, missing-modality, checkpoint read/write, event
and curve writes, metrics JSON). A phase's time excludes the phases and imports nested in
it, so the phases add up to the in-process time; what no phase claims is ``other``
(argument parsing, the hardware stamp, the verb's own glue). The parent adds the interpreter
start-up and exit as the process wall time minus this in-process time.

Standard library only at import, so the wrapper itself costs nothing measurable.
"""

from __future__ import annotations

import argparse
import builtins
import json
import sys
import time
from collections.abc import Callable
from typing import Any

# (module, attribute path, phase). Functions are replaced on the module (or class) the moment
# the module is first imported, so call-time ``from x import f`` picks up the wrapper.
TARGETS: tuple[tuple[str, str, str], ...] = (
    ("rightsize.params", "load_block", "params"),
    ("rightsize.cohort.arrays", "load_arrays", "manifest load"),
    ("rightsize.cohort.arrays", "load_columns", "manifest load"),
    ("rightsize.probes.engine.data", "Moments.fit", "input moments + PCA"),
    ("rightsize.probes.engine.estimator", "build_module", "model build"),
    ("rightsize.probes.models.echo.numpy_model", "init_probe", "model build"),
    ("rightsize.probes.engine.estimator", "Estimator.fit", "training"),
    ("rightsize.probes.evaluation.evaluate", "evaluate_probe", "evaluation"),
    ("rightsize.probes.evaluation.missing", "missing_modality", "missing-modality"),
    ("rightsize.probes.engine.checkpoint", "save_checkpoint", "checkpoint write"),
    ("rightsize.probes.engine.checkpoint", "load_checkpoint", "checkpoint read"),
    ("rightsize.probes.engine.runlog", "RunLog.epoch", "events + curve write"),
    ("rightsize.probes.engine.runlog", "RunLog.close", "events + curve write"),
    ("rightsize.probes.engine.runlog", "RunLog.__init__", "events + curve write"),
    ("rightsize.console", "emit_json", "metrics write"),
)

_totals: dict[str, float] = {}
_stack: list[list[Any]] = []          # [phase, start, nested seconds]
_patched: set[tuple[str, str]] = set()


def _enter(phase: str) -> None:
    _stack.append([phase, time.perf_counter(), 0.0])


def _leave() -> None:
    phase, start, nested = _stack.pop()
    wall = time.perf_counter() - start
    _totals[phase] = _totals.get(phase, 0.0) + wall - nested
    if _stack:
        _stack[-1][2] += wall


def _wrap(fn: Callable[..., Any], phase: str) -> Callable[..., Any]:
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        _enter(phase)
        try:
            return fn(*args, **kwargs)
        finally:
            _leave()

    wrapper.__wrapped__ = fn  # type: ignore[attr-defined]
    wrapper.__name__ = getattr(fn, "__name__", "wrapped")
    wrapper.__doc__ = fn.__doc__
    return wrapper


def _patch_loaded() -> None:
    for mod_name, attr, phase in TARGETS:
        if (mod_name, attr) in _patched or mod_name not in sys.modules:
            continue
        _patched.add((mod_name, attr))
        owner: Any = sys.modules[mod_name]
        *path, name = attr.split(".")
        for part in path:
            owner = getattr(owner, part, None)
        if owner is None or name not in vars(owner):
            continue
        raw = vars(owner)[name]
        if isinstance(raw, classmethod):
            setattr(owner, name, classmethod(_wrap(raw.__func__, phase)))
        else:
            setattr(owner, name, _wrap(raw, phase))


_real_import = builtins.__import__


def _timed_import(name: str, *args: Any, **kwargs: Any) -> Any:
    _enter("imports")
    try:
        return _real_import(name, *args, **kwargs)
    finally:
        _leave()
        if not any(p[0] == "imports" for p in _stack):
            _patch_loaded()


def main() -> int:
    """Run ``rightsize ARGS`` with phase timers; write the phases as JSON to argv[1].

    ``--os-exit`` before ARGS ends the process the way a console script whose entry point
    is ``rightsize.cli.console_main`` does (flush, then ``os._exit``, no module teardown).
    """
    ap = argparse.ArgumentParser(description="Run one rightsize command with phase timers; "
                                             "write the phases as JSON to OUT.")
    ap.add_argument("out", metavar="OUT", help="JSON file to write the phases to")
    ap.add_argument("--os-exit", action="store_true",
                    help="end like the console script (flush, os._exit, no teardown)")
    ap.add_argument("argv", nargs=argparse.REMAINDER, metavar="ARGS",
                    help="the rightsize command line, e.g. train fused --params params.yaml")
    args = ap.parse_args()
    out_path, argv, os_exit = args.out, args.argv, args.os_exit
    if argv[:1] == ["--os-exit"]:              # REMAINDER takes it when it follows OUT
        os_exit, argv = True, argv[1:]
    t0 = time.perf_counter()
    builtins.__import__ = _timed_import
    rc = 1
    try:
        from rightsize.cli import main as cli_main

        rc = cli_main(argv)
    finally:
        builtins.__import__ = _real_import
        total = time.perf_counter() - t0
        phases = dict(_totals)
        phases["other"] = total - sum(phases.values())
        with open(out_path, "w", encoding="utf-8") as fh:
            json.dump({"rc": rc, "in_process_s": total, "phases": phases,
                       "modules": sorted({m.split(".")[0] for m in sys.modules})}, fh)
    if os_exit:
        import logging
        import os

        logging.shutdown()
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(rc)
    return rc


if __name__ == "__main__":
    sys.exit(main())
