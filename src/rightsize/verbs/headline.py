"""Headline metrics: the few scalars per stage that `dvc exp show` and `dvc metrics diff` compare.

Every stage writes its whole result as a detail JSON (``metrics/eval/<probe>.json`` and the
rest: outputs with ``cache: false`` that the report and the verbs read). Given
``--headline PATH`` it also writes a headline file, which ``dvc.yaml`` declares under
``metrics:``. The headline is picked here, where files are written, out of the same dicts the
detail files hold, so the libraries and the detail files stay as they are.

A headline file holds one name and its numbers (``{"fused": {"test_mae": 5.84, ...}}``):
DVC heads a column with the key alone when no other metrics file has that key, so the
columns read ``fused.test_mae`` and ``demo.epoch_hours`` instead of a file path each.
What each number means and its unit: docs/outputs.md, whose table a test holds to
:data:`LAYOUT`.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

from rightsize.errors import DataError

HOURS = 1 / 3600       # seconds -> hours
SECONDS = 3600.0       # hours -> seconds


@dataclass(frozen=True)
class Pick:
    """One headline number: the ``source`` result's dotted ``key``, times ``scale``."""

    name: str                 # its key in the headline file
    source: str               # which of the stage's results (``eval``, ``missing``, ...)
    key: str                  # dotted key in that result
    scale: float = 1.0        # unit change (seconds <-> hours)
    optional: bool = False    # absent from some results: then left out, not an error


@dataclass(frozen=True)
class Kind:
    """The headline of one kind of stage output: its name pattern and its numbers."""

    name: str                 # ``{item}`` is the stage's probe, run or model
    picks: tuple[Pick, ...]


RUN = Kind("{item}", (
    Pick("step_time_s", "report", "step_time_s.median"),
    Pick("epoch_hours", "report", "epoch_hours"),
    Pick("epochs_run", "report", "epochs_run"),
    Pick("active_hours", "report", "active_hours"),
    Pick("calendar_hours", "report", "calendar_hours"),
    Pick("eta_hours", "report", "eta.remaining_calendar_hours", optional=True),
))


def in_seconds(kind: Kind) -> Kind:
    """``kind`` with its durations in seconds: each ``<x>_hours`` becomes ``<x>_s``."""
    return Kind(kind.name, tuple(
        replace(p, name=p.name.removesuffix("_hours") + "_s", scale=p.scale * SECONDS)
        if p.name.endswith("_hours") else p for p in kind.picks))


LAYOUT: dict[str, Kind] = {
    # train@<probe>: metrics/eval/<probe>.json and metrics/missing/<probe>.json
    "probe": Kind("{item}", (
        Pick("test_mae", "eval", "test.mae"),
        Pick("test_mae_mean", "eval", "test.mae_mean"),
        Pick("test_mae_sd", "eval", "test.mae_sd"),
        Pick("test_auroc_mean", "eval", "test.auroc_mean"),
        Pick("train_eval_s", "eval", "wall_clock_s.total"),
        Pick("peak_rss_mb", "eval", "peak_rss_mb"),
        # the test rows with both modalities; a split without any has no such numbers
        Pick("mae_both", "missing", "both_present.mae", optional=True),
        Pick("mae_no_echo", "missing", "echo_absent.mae", optional=True),
        Pick("mae_no_ecg", "missing", "ecg_absent.mae", optional=True),
        # a probe that attends from echo to ECG tokens, on a cohort with planted tokens: the
        # test weight on the planted event of the head validation chose, across seeds (a new
        # name: the old attention_best_head_* chose the head on the test split); every head
        # stays in the detail
        Pick("attention_best_head_val_mean", "eval", "attention.echo_to_ecg.best_head_val_mean",
             optional=True),
        Pick("attention_best_head_val_sd", "eval", "attention.echo_to_ecg.best_head_val_sd",
             optional=True),
        Pick("attention_found_share", "eval", "attention.echo_to_ecg.found_share",
             optional=True),
    )),
    # telemetry@<run>: metrics/telemetry/<run>.json, a rescued run (hours)
    "run": RUN,
    # probe_telemetry@<probe>: metrics/telemetry/probe_<probe>.json, a run of seconds
    "run_seconds": in_seconds(RUN),
    # cohort: metrics/cohort.json
    "cohort": Kind("manifest", (
        Pick("rows", "cohort", "n_subjects"),
        Pick("bytes", "cohort", "manifest_bytes"),
    )),
    # footprint: metrics/footprint.json
    "footprint": Kind("footprint", (
        Pick("checkpoint_bytes", "footprint", "checkpoint_bytes_total"),
        Pick("peak_rss_mb", "footprint", "peak_rss_mb.max"),
    )),
    # token_cost: metrics/token_cost.json, the fused probe at its largest ECG token count
    "token_cost": Kind("token_cost", (
        Pick("train_eval_s", "token_cost", "max_tokens.train_eval_s"),
        Pick("peak_rss_mb", "token_cost", "max_tokens.peak_rss_mb"),
    )),
    # planted_ceiling: metrics/eval/fused_ceiling.json, the oracle and the told learner at the
    # largest ECG token count
    "planted_ceiling": Kind("planted_ceiling", (
        Pick("told_learner_weight", "planted_ceiling", "max_tokens.told_learner_weight",
             optional=True),
        Pick("told_learner_null", "planted_ceiling", "max_tokens.told_learner_null",
             optional=True),
    )),
    # compare: metrics/fused_vs_concat.json, concat's test MAE - fused's, paired by seed
    "compare": Kind("{item}", (
        Pick("mae_gain_mean", "compare", "mae_gain_mean", optional=True),
        Pick("mae_gain_lo", "compare", "mae_gain_lo", optional=True),
        Pick("mae_gain_hi", "compare", "mae_gain_hi", optional=True),
    )),
    # encoder_bench@<model>: metrics/encoders/<model>.json
    "encoder": Kind("{item}_encoder", (
        Pick("tokens_per_record", "bench", "tokens_per_record"),
        Pick("records_per_s", "bench", "records_per_s"),
    )),
    # sizing: metrics/sizing.json
    "sizing": Kind("ask", (
        Pick("wall_hours_low", "sizing", "ask.option.wall_s_low", scale=HOURS),
        Pick("wall_hours_high", "sizing", "ask.option.wall_s_high", scale=HOURS),
        Pick("storage_bytes", "sizing", "ask.storage_bytes"),
    )),
    # extract: metrics/extract.json, one extraction run beside the ask's prediction for it
    "extract": Kind("extract", (
        Pick("records_done", "extract", "records"),
        Pick("wall_s", "extract", "wall_s"),
        Pick("predicted_wall_s_high", "extract", "prediction_check.predicted_wall_s_high",
             optional=True),
        Pick("ratio_to_high", "extract", "prediction_check.ratio_to_high", optional=True),
        Pick("peak_rss_mb", "extract", "peak_rss_mb_max_worker", optional=True),
    )),
}


def _lookup(data: Any, key: str) -> tuple[bool, Any]:
    """``(found, value)`` at dotted ``key`` of nested mappings."""
    node = data
    for part in key.split("."):
        if not isinstance(node, Mapping) or part not in node:
            return False, None
        node = node[part]
    return True, node


def numbers(kind: str, sources: Mapping[str, Any]) -> dict[str, int | float]:
    """``{name: value}`` of ``kind``'s picks out of the stage's results ``sources``.

    A value that is not a finite number (an AUROC of a one-class split is null) is left
    out; a missing key that is not optional means the result changed shape: DataError.
    """
    out: dict[str, int | float] = {}
    for pick in LAYOUT[kind].picks:
        found, value = _lookup(sources[pick.source], pick.key)
        if not found:
            if pick.optional:
                continue
            raise DataError(f"headline {kind}: the {pick.source} result has no key "
                            f"{pick.key} (headline {pick.name})")
        if isinstance(value, bool) or not isinstance(value, int | float) or \
                not math.isfinite(value):
            continue
        out[pick.name] = value if pick.scale == 1.0 else value * pick.scale
    return out


def headline(kind: str, item: str | None = None, **sources: Any) -> dict[str, Any]:
    """The headline document of ``kind`` for ``item``: ``{name: {pick: value}}``."""
    return {LAYOUT[kind].name.format(item=item): numbers(kind, sources)}


def write(path: str, doc: Mapping[str, Any], outputs: Any = None) -> None:
    """Write a headline document atomically (``-``: on stdout; with ``outputs``, staged
    there with the command's other outputs)."""
    from rightsize import console

    console.emit_json(path, doc, outputs)


def add_argument(parser: Any, what: str) -> None:
    """The ``--headline JSON`` flag, worded the same for every verb."""
    parser.add_argument("--headline", default=None, metavar="JSON",
                        help=f"also write the headline numbers ({what}) to JSON: the file "
                             "dvc.yaml declares under metrics: (docs/outputs.md)")
