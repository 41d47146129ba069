"""rightsize.experiments on real `dvc` output from a throwaway two-file DVC project.

These tests need git and dvc but none of the pipeline verbs: the stage is a few lines
of Python, so they check the parsing and the queue plumbing in seconds.
"""

from __future__ import annotations

import json
import statistics
from pathlib import Path

import pytest
from pipeline_helpers import commit_all, dvc, git, run

from rightsize import experiments as ex

STAGE = """\
import json, pathlib, sys, yaml
p = yaml.safe_load(open("params.yaml"))["train"]
if p["seed"] < 0:
    print(f"rightsize: error: train.seed: must be >= 0, got {p['seed']}", file=sys.stderr)
    sys.exit(2)
pathlib.Path("out").mkdir(exist_ok=True)
pathlib.Path("out/model.bin").write_bytes(bytes([p["seed"] % 256]) * 16)
m = {"test": {"mae": 1.0 + 0.25 * p["seed"], "mae_lo": 0.5, "ci": [0.1, 0.2]},
     "label": "x", "ok": True}
pathlib.Path("metrics.json").write_text(json.dumps(m))
"""


@pytest.fixture(scope="module")
def toy(tmp_path_factory, pipeline_env) -> Path:
    """A committed one-stage DVC project whose metric depends on train.seed."""
    root = tmp_path_factory.mktemp("toy")
    (root / "stage.py").write_text(STAGE)
    (root / "params.yaml").write_text("train:\n  seed: 0\n")
    (root / "dvc.yaml").write_text(
        "stages:\n  train:\n"
        "    cmd: python stage.py\n"
        "    deps: [stage.py]\n    params: [train]\n    outs: [out]\n"
        "    metrics:\n      - metrics.json:\n          cache: false\n"
    )
    git(root, pipeline_env, "init", "-q")
    dvc(root, pipeline_env, "init", "-q")
    dvc(root, pipeline_env, "repro")
    commit_all(root, pipeline_env, "toy")
    return root


@pytest.mark.slow
def test_exp_show_rows_keep_numbers_only(toy, pipeline_env):
    records = json.loads(dvc(toy, pipeline_env, "exp", "show", "--json").stdout)
    rows = ex.parse_exp_show(records)
    assert [r.is_baseline for r in rows] == [True]
    assert rows[0].metrics == {"metrics.json:test.mae": 1.0, "metrics.json:test.mae_lo": 0.5}
    assert rows[0].params == {"params.yaml:train.seed": 0}


@pytest.fixture(scope="module")
def swept(toy, pipeline_env):
    """One ``rightsize sweep`` over seeds 2 and -3 (the stage rejects negative seeds)."""
    return run(["rightsize", "sweep", "--seeds", "2,-3", "--poll", "1", "--timeout", "300"],
               toy, pipeline_env, check=False)


@pytest.mark.slow
def test_sweep_failure_prints_worker_log_and_one_line_error(swept):
    assert swept.returncode == ex.DvcError.exit_code, swept.stderr
    last = swept.stderr.strip().splitlines()[-1]
    assert last.startswith("rightsize: error: experiment ")
    assert "[train.seed=-3] failed: train.seed: must be >= 0, got -3" in last
    assert "; log: dvc queue logs " in last
    # The failed experiment's worker log is on stderr above the one-line error.
    assert "--- dvc queue logs " in swept.stderr
    assert "Running stage 'train'" in swept.stderr
    assert "queued 2 experiments" in swept.stderr


@pytest.mark.slow
def test_seeds_summarizes_baseline_and_finished_experiments(toy, pipeline_env, swept, tmp_path):
    out = tmp_path / "seeds.json"
    run(["rightsize", "spread", "--json", str(out)], toy, pipeline_env)
    summary = json.loads(out.read_text())
    # Oracle: the raw `dvc exp show --json` values, read without rightsize's parser.
    raw = json.loads(dvc(toy, pipeline_env, "exp", "show", "--json").stdout)
    base = [r for r in raw if r["rev"] != "workspace"][0]
    maes = [base["data"]["metrics"]["metrics.json"]["data"]["test"]["mae"]]
    seeds = []
    for group in base["experiments"]:
        if group["executor"]["state"] != "success":
            continue
        data = group["revs"][0]["data"]
        seeds.append(data["params"]["params.yaml"]["data"]["train"]["seed"])
        maes.append(data["metrics"]["metrics.json"]["data"]["test"]["mae"])
    assert seeds == [2]
    assert len(base["experiments"]) == 2  # the failed one is listed by DVC ...
    mae = summary["metrics"]["metrics.json:test.mae"]
    assert mae["n"] == 2  # ... but not summarized: baseline + seed 2
    assert mae["mean"] == pytest.approx(statistics.fmean(maes))
    assert mae["sd"] == pytest.approx(statistics.stdev(maes))
    assert summary["metrics"]["metrics.json:test.mae_lo"]["sd"] == 0.0
    assert {r["params"]["params.yaml:train.seed"] for r in summary["rows"]} == {0, 2}
    table = run(["rightsize", "spread"], toy, pipeline_env).stdout
    assert "metrics.json:test.mae" in table and "1.25 ± 0.354" in table


@pytest.mark.slow
def test_seeds_rejects_prefix_matching_nothing(toy, pipeline_env):
    proc = run(["rightsize", "spread", "--metrics-prefix", "nope/"], toy, pipeline_env,
               check=False)
    assert proc.returncode == 2
    assert proc.stderr.strip().splitlines()[-1].startswith("rightsize: error: no numeric metric")


def test_summarize_matches_statistics():
    rows = [ex.ExpRow(name=f"r{i}", rev=str(i), is_baseline=i == 0,
                      metrics={"a": float(v), "b": 2.0}) for i, v in enumerate([1, 4, 9, 10])]
    s = ex.summarize(rows)
    assert s["a"].mean == pytest.approx(6.0)
    assert s["a"].sd == pytest.approx(statistics.stdev([1, 4, 9, 10]))
    assert (s["a"].min, s["a"].max, s["a"].n) == (1.0, 10.0, 4)
    assert ex.summarize(rows[:1])["a"].sd is None
    assert set(ex.summarize(rows, ("b",))) == {"b"}


def test_queue_output_parsers():
    queued = ex.parse_queued(
        "Queueing with overrides '{'params.yaml': ['train.seed=1']}'.\n"
        "Queued experiment 'peaky-gaol' for future execution.\n"
    )
    assert queued == [("peaky-gaol", "train.seed=1")]
    states, workers = ex.parse_queue_status(
        "Task     Name        Created    Status\n"
        "bf45f7f  peaky-gaol  05:24 AM   Running\n"
        "e479ed1  mangy-play  Dec 02, 2026   Failed\n\n"
        "Worker status: 1 active, 0 idle\n"
    )
    assert states == {"peaky-gaol": "running", "mangy-play": "failed"}
    assert workers == 1
    log = "Running stage 'x':\nrightsize: error: k: bad\nERROR: failed to reproduce 'x'\n"
    assert ex.failure_line(log) == "rightsize: error: k: bad"
    assert ex.failure_line("ERROR: a\nERROR: b\nwarning") == "ERROR: b"


@pytest.mark.slow
def test_seeds_baseline_is_the_workspace_the_report_reads(tmp_path, pipeline_env):
    """After `dvc repro` moved a metric (another CPU), `spread` reads the workspace's file,
    as the report does; --baseline head reads the committed one (issue 44)."""
    root = tmp_path / "toy"
    root.mkdir()
    (root / "stage.py").write_text(STAGE)
    (root / "params.yaml").write_text("train:\n  seed: 0\n")
    (root / "dvc.yaml").write_text(
        "stages:\n  train:\n    cmd: python stage.py\n    deps: [stage.py]\n"
        "    params: [train]\n    outs: [out]\n"
        "    metrics:\n      - metrics.json:\n          cache: false\n")
    git(root, pipeline_env, "init", "-q")
    dvc(root, pipeline_env, "init", "-q")
    dvc(root, pipeline_env, "repro")
    commit_all(root, pipeline_env, "toy")
    moved = {"test": {"mae": 1.125, "mae_lo": 0.5}}          # what the workspace now holds
    (root / "metrics.json").write_text(json.dumps(moved))
    out = tmp_path / "seeds.json"
    proc = run(["rightsize", "spread", "--json", str(out)], root, pipeline_env)
    summary = json.loads(out.read_text())
    assert summary["metrics"]["metrics.json:test.mae"]["mean"] == 1.125
    assert summary["rows"][0]["name"] == "workspace" and summary["rows"][0]["baseline"]
    assert "differ from HEAD's in 1 keys (e.g. metrics.json:test.mae)" in proc.stderr
    run(["rightsize", "spread", "--baseline", "head", "--json", str(out)], root, pipeline_env)
    committed = json.loads(dvc(root, pipeline_env, "exp", "show", "--json").stdout)
    head = [r for r in committed if r["rev"] != "workspace"][0]
    assert json.loads(out.read_text())["metrics"]["metrics.json:test.mae"]["mean"] == \
        head["data"]["metrics"]["metrics.json"]["data"]["test"]["mae"] == 1.0
