"""The FLOPs a torch probe's training loop executed, counted on the trainer's own step.

:func:`loop_flops` builds the probe's trainer (the accelerator's, or the textbook one) for
one replica on a batch of the train split and the whole validation split, and counts with
torch's ``FlopCounterMode`` one optimizer step at each batch size the loop uses (full
batches and the last, shorter one) and one validation pass. The loop runs every replica for
every epoch (:mod:`rightsize.probes.engine.loop`), so the fit executed ``replicas x epochs x
(sum over its steps + one validation pass)``. The counter counts matrix products (mm, addmm,
bmm, attention); LayerNorm, softmax, GELU and the optimizer are elementwise and not counted,
as in the field's FLOP counters. The oneDNN route of :mod:`rightsize.probes.accel.gemm`
computes the same products through a kernel the counter does not see, so the count runs with
that route off; it runs on a fresh trainer with the RNG state restored afterwards, so the
trained replicas and everything after them are untouched.

Counting costs little compute, but its first use in a process imports torch's compiler
stack (dynamo; about 1 s), a third of a small probe's whole stage. The per-epoch count is a
function of the code and the shapes alone, so it is kept in the user's cache folder
(:mod:`rightsize.ground.user_cache`) under a key of everything it depends on
(:func:`count_key`: torch's version, the trainer, the probe's architecture and config block,
the input shapes, the step sizes, and the source of the probes package); a later fit with
the same key reads it.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

import numpy as np


def step_sizes(n: int, batch_size: int) -> list[tuple[int, int]]:
    """``(rows, steps)`` of the loop's steps over ``n`` rows: full batches, then the rest."""
    full = [(batch_size, n // batch_size)] if n >= batch_size else []
    return full + ([(n % batch_size, 1)] if n % batch_size else [])


def counted(fn: Callable[[], Any]) -> float:
    """Matrix-product FLOPs ``fn`` executes (torch's ``FlopCounterMode``)."""
    from torch.utils.flop_counter import FlopCounterMode

    with FlopCounterMode(display=False) as counter:
        fn()
    return float(counter.get_total_flops())


def loop_flops(make_trainer: Callable[[Any], Any], job: Any, batch_size: int,
               epochs: int) -> dict[str, float] | None:
    """Executed FLOPs of the loop that trained ``job`` (a
    :class:`~rightsize.probes.engine.estimator.FitJob`) with ``make_trainer``'s trainer for
    ``epochs`` epochs at ``batch_size``: ``{"step": FLOPs of the steps of one epoch of one
    replica, "validation": one validation pass of one replica, "fit": the whole loop,
    "source": counted now or read from the cache}``;
    None, with a warning, where the counter fails (a count must not stop a training run)."""
    from rightsize.ground.user_cache import cache_path, read_json, write_json

    key = count_key(make_trainer, job, batch_size)
    path = cache_path(f"flops-{key}.json")
    per_epoch, source = read_json(path), "counted earlier on this machine (same code, shapes)"
    if per_epoch is None or not {"step", "validation"} <= per_epoch.keys():
        source = "counted now"
        try:
            per_epoch = _count(make_trainer, job, batch_size)
        except (AssertionError, RuntimeError) as exc:
            from rightsize import console

            console.warn(f"{job.name}: FLOPs not counted ({type(exc).__name__}: {exc})")
            return None
        write_json(path, per_epoch)
    step, validation = float(per_epoch["step"]), float(per_epoch["validation"])
    return {"step": step, "validation": validation,
            "fit": len(job.seeds) * epochs * (step + validation), "source": source}


def count_key(make_trainer: Callable[[Any], Any], job: Any, batch_size: int) -> str:
    """16 hex digits naming a per-epoch count: everything it depends on."""
    import hashlib
    import json
    from pathlib import Path

    import torch

    import rightsize.probes

    code = hashlib.sha256()
    root = Path(rightsize.probes.__file__).parent
    for f in sorted(root.rglob("*.py")):
        code.update(f.relative_to(root).as_posix().encode() + b"\0" + f.read_bytes())
    shapes = {split: [list(data.echo.shape[1:]), list(data.ecg.shape[1:])]
              for split, data in (("train", job.train), ("val", job.val))}
    text = json.dumps({"torch": torch.__version__, "device": job.device,
                       "trainer": f"{make_trainer.__module__}.{make_trainer.__qualname__}",
                       "accelerate": job.cfg.accelerate, "arch": job.arch,
                       "block": dataclasses.asdict(job.probe_config), "shapes": shapes,
                       "steps": step_sizes(len(job.train), batch_size),
                       "n_val": len(job.val), "code": code.hexdigest()},
                      sort_keys=True, default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def _count(make_trainer: Callable[[Any], Any], job: Any, batch_size: int) -> dict[str, float]:
    """The per-epoch count of one replica: its steps and one validation pass."""
    import torch

    from rightsize.probes.accel import gemm

    sizes = step_sizes(len(job.train), batch_size)
    rows = np.arange(max(size for size, _ in sizes))
    one = dataclasses.replace(job, train=job.train.subset(rows), seeds=job.seeds[:1])
    before = gemm.set_onednn(False)
    try:
        with torch.random.fork_rng(devices=[]):
            trainer = make_trainer(one)
            trainer.start_epoch()
            step = sum(k * counted(lambda s=size: trainer.step(0, slice(0, s)))
                       for size, k in sizes)
            validation = counted(trainer.val_losses)
    finally:
        gemm.set_onednn(before)
    return {"step": step, "validation": validation}
