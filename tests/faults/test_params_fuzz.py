"""A params fuzzer (issue 43): every key of params.yaml, given values of the wrong type,
negative, zero, NaN, +-inf, huge, empty, and strings with newline, ``#``, ``%``, quotes,
backticks and ``$()``, is accepted or refused with exit 2 or 4 naming the key; never
another exception (exit 1, a traceback), and never a shell metacharacter run.

Breadth in-process: each block's own dataclass parse (what every verb calls at its edge,
``rightsize.params.parse``), for every leaf of the repository's params.yaml, the fixed
hostile values, then hypothesis's draws (fixed seed: ``derandomize``, a bounded budget).
Depth in subprocesses: a few real verb runs with hostile strings, under a marker check.
"""

from __future__ import annotations

import copy
import importlib
import math
from pathlib import Path
from typing import Any

import pytest
import yaml
from fault_helpers import rightsize
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rightsize.errors import RightsizeError
from rightsize.params import parse

ROOT = Path(__file__).resolve().parents[2]
PARAMS = yaml.safe_load((ROOT / "params.yaml").read_text())

#: The dataclass each verb parses a block with (module, class).
BLOCKS = {
    "demo": ("rightsize.telemetry.demo", "DemoParams"),
    "telemetry": ("rightsize.telemetry.report_config", "TelemetryParams"),
    "cohort": ("rightsize.cohort.config", "CohortConfig"),
    "train": ("rightsize.probes.engine.config", "TrainConfig"),
    "evaluate": ("rightsize.probes.engine.config", "EvaluateConfig"),
    "footprint": ("rightsize.probes.measurements.footprint", "FootprintConfig"),
    "token_cost": ("rightsize.probes.measurements.token_cost", "TokenCostConfig"),
    "planted_ceiling": ("rightsize.probes.evaluation.learnable", "LearnerConfig"),
    "encoder_bench": ("rightsize.sizing.config", "EncoderBenchConfig"),
    "sizing": ("rightsize.sizing.config", "SizingConfig"),
    "ecg_demo": ("rightsize.extraction.config", "EcgDemoConfig"),
    "extract": ("rightsize.extraction.config", "ExtractConfig"),
    "report": ("rightsize.reporting.config", "ReportConfig"),
}

SHELL = ("`touch PWNED`", "$(touch PWNED)", "x;touch PWNED")
HOSTILE: tuple[Any, ...] = (
    "", "x\ny", "#x", "%j", "'q'", '"q"', *SHELL,
    -1, 0, 10**30, -(10**30), 2**70, -0.5, 0.0, 1e308,
    math.nan, math.inf, -math.inf,
    True, None, [], {}, [1], ["x\ny"], {"a": 1},
)


def _leaves(node: Any, path: tuple[Any, ...]) -> list[tuple[Any, ...]]:
    """Paths to every leaf under ``node`` (a list is a leaf, and so is its first item)."""
    if isinstance(node, dict):
        return [p for k, v in node.items() for p in _leaves(v, (*path, k))]
    return [path, (*path, 0)] if isinstance(node, list) and node else [path]


LEAVES = [p for block in PARAMS for p in _leaves(PARAMS[block], (block,))]


def _dotted(path: tuple[Any, ...]) -> str:
    return "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in path)[1:]


def outcome(path: tuple[Any, ...], value: Any) -> str | None:
    """None when the block with ``value`` at ``path`` parses, or is refused with exit 2/4
    naming the key; otherwise what went wrong, in one line."""
    module, name = BLOCKS[path[0]]
    cls = getattr(importlib.import_module(module), name)
    data = {path[0]: copy.deepcopy(PARAMS[path[0]])}
    node = data
    for part in path[:-1]:
        node = node[part]
    node[path[-1]] = value
    key = _dotted(path)
    try:
        parse(cls, data[path[0]], path[0])
    except RightsizeError as exc:
        named = key.split("[")[0] in str(exc) or _dotted(path[:-1]) in str(exc)
        if exc.exit_code not in (2, 4) or not named:
            return f"{key}={value!r}: exit {exc.exit_code}, message {str(exc)[:120]!r}"
        return None
    except Exception as exc:  # noqa: BLE001 - the point: anything else is a finding
        return f"{key}={value!r}: {type(exc).__name__}: {str(exc)[:120]}"
    if isinstance(value, float) and not math.isfinite(value):
        return f"{key}={value!r}: accepted a non-finite number"
    return None


def test_every_block_has_its_parser():
    assert set(PARAMS) == set(BLOCKS)
    assert len(LEAVES) > 100


def test_every_key_with_every_hostile_value():
    found = [f for path in LEAVES for v in HOSTILE if (f := outcome(path, v)) is not None]
    assert not found, f"{len(found)} findings:\n" + "\n".join(found[:40])


VALUES = st.one_of(
    st.floats(allow_nan=True, allow_infinity=True),
    st.integers(min_value=-(2**80), max_value=2**80),
    st.text(alphabet="ab \n\t#%'\"`$();|&<>\\\x00\x1b", max_size=12),
    st.booleans(), st.none(),
    st.lists(st.one_of(st.integers(), st.floats(), st.text(max_size=3)), max_size=3),
    st.dictionaries(st.text(max_size=3), st.integers(), max_size=2),
)


@settings(derandomize=True, max_examples=1500, deadline=None, database=None,
          suppress_health_check=[HealthCheck.too_slow])
@given(path=st.sampled_from(LEAVES), value=VALUES)
def test_drawn_values_are_accepted_or_named(path, value):
    assert outcome(path, value) is None


@given(name=st.text(alphabet="ab.-_/ `$()'\"\n;#%", min_size=1, max_size=8))
@settings(derandomize=True, max_examples=200, deadline=None, database=None)
def test_run_names_are_plain_or_refused_before_any_verb(name, tmp_path_factory):
    from rightsize.errors import ParamsError
    from rightsize.params import RUN_NAME, load_params

    path = tmp_path_factory.getbasetemp() / "fuzz_runs.yaml"
    path.write_text(yaml.safe_dump({"telemetry": {"runs": {name: {"train_records": 1}}}}))
    if RUN_NAME.fullmatch(name):
        load_params(path)
    else:
        with pytest.raises(ParamsError, match="telemetry.runs: run name"):
            load_params(path)


# A few real runs: hostile strings where verbs take paths and names (the marker must not
# appear), and sizes found by a subprocess sweep (-1, 0, 1e12 for every number of the cohort,
# ecg_demo, extract and report blocks), each exit 2 or 4 naming the key or the file, never 1.
RUNS = [
    ("ecg_demo", "records", "$(touch PWNED)", ["ecg-demo", "c"]),
    ("extract", "records", "`touch PWNED`.csv", ["extract", "--out", "o"]),
    ("extract", "root", "x;touch PWNED", ["extract", "--out", "o"]),
    ("extract", "device", "cuda:$(touch PWNED)", ["extract", "--out", "o"]),
    ("extract", "weights", "$(touch PWNED)", ["extract", "--out", "o"]),
    ("cohort", "source", "`touch PWNED`", ["cohort", "--out", "m.parquet"]),
    ("cohort", "ecg_dim", 10**12, ["cohort", "--out", "m.parquet"]),   # was MemoryError, exit 1
]


@pytest.mark.parametrize(("block", "key", "value", "verb"), RUNS)
def test_hostile_strings_in_real_verbs(block, key, value, verb, corpus, tmp_path):
    params = yaml.safe_load((corpus / "params.yaml").read_text())
    params[block][key] = value
    (tmp_path / "params.yaml").write_text(yaml.safe_dump(params))
    res = rightsize([*verb, "--params", tmp_path / "params.yaml"], cwd=corpus, timeout=120)
    assert res.rc in (2, 4), res.err
    line = res.error_line()
    assert f"{block}.{key}" in line or str(value) in line, line
    assert not list(corpus.rglob("PWNED")) and not list(tmp_path.rglob("PWNED"))
    assert not (ROOT / "PWNED").exists()


# The fields of metrics files the report reads: every JSON file of a real metrics folder
# (the repository's, when the pipeline has run) with every value replaced.
def _poison(node: Any, value: Any) -> Any:
    if isinstance(node, dict):
        return {k: _poison(v, value) for k, v in node.items()}
    if isinstance(node, list):
        return [_poison(v, value) for v in node]
    return value


@pytest.mark.parametrize("shape", ["negative", "list", "string"])
def test_the_report_on_poisoned_metrics_files_is_never_exit_1(shape, corpus, tmp_path):
    import json
    import shutil

    if not (ROOT / "metrics" / "eval").is_dir():
        pytest.skip("metrics/ has no eval files: run dvc repro first")
    metrics = tmp_path / "metrics"
    shutil.copytree(ROOT / "metrics", metrics)
    for f in metrics.rglob("*.json"):
        doc = json.loads(f.read_text())
        f.write_text(json.dumps({"negative": _poison(doc, -1), "list": [],
                                 "string": _poison(doc, "x")}[shape]))
    res = rightsize(["report", "--params", corpus / "params.yaml", "--metrics", metrics,
                     "--out", tmp_path / "r", "-q"], cwd=tmp_path)
    assert res.rc in (0, 2, 4) and "Traceback" not in res.err, res.err[-400:]
