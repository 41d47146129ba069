"""`dvc repro` of the tiny project: clean status, metrics and plots, targeted re-runs."""

from __future__ import annotations

import json

import pytest
from pipeline_helpers import (
    GRADIENT_TRAINED,
    PROBES,
    cached_outs,
    dvc,
    dvc_status,
    git,
    metrics_show,
    repro_stages,
    set_params,
)

from rightsize.experiments import flatten

pytestmark = pytest.mark.slow

# token_cost_case@N for every N of the tiny project's token_cost.tokens (pipeline_helpers)
TOKEN_COST_CASES = {"token_cost_case@1", "token_cost_case@3"}
ALL_STAGES = {
    "demo_run", "verify@demo", "telemetry@demo", "cohort", "footprint",
    "sizing", "encoder_bench@ecg", "encoder_bench@echo", "token_cost", "ecg_demo", "extract",
    "planted_ceiling", *(f"train@{p}" for p in PROBES), *TOKEN_COST_CASES,
    *(f"probe_telemetry@{p}" for p in GRADIENT_TRAINED),
}


def _keys(data: dict, *needles: str) -> list[str]:
    """Flattened keys of ``data`` that contain every needle (case-insensitive)."""
    return [k for k in flatten(data) if all(n in k.lower() for n in needles)]


def test_repro_is_clean_and_committed(built_project, pipeline_env):
    status = dvc_status(built_project, pipeline_env)
    assert status == {}
    # Every output is either DVC-cached (git-ignored) or a committed metrics file.
    porcelain = git(built_project, pipeline_env, "status", "--porcelain").stdout
    assert porcelain == ""
    lock = (built_project / "dvc.lock").read_text()
    for stage in ALL_STAGES:
        assert f"  {stage}:" in lock, stage
    # Cached outputs are git-ignored and never committed to git.
    outs = cached_outs(built_project, pipeline_env)
    assert {"data/manifest.parquet", "models/fused", "data/probe_runs/fused"} <= set(outs)
    assert git(built_project, pipeline_env, "ls-files", "--", *outs).stdout == ""
    ignored = git(built_project, pipeline_env, "check-ignore", *outs).stdout.split()
    assert sorted(ignored) == sorted(outs)


def test_metrics_show_lists_the_headline_files_and_the_detail_beside_them(built_project,
                                                                          pipeline_env):
    # DVC's metrics are the headline files only; the detail files are there, on disk.
    metrics = metrics_show(built_project, pipeline_env)
    assert set(metrics) == {
        *(f"metrics/headline/probes/{p}.json" for p in PROBES),
        *(f"metrics/headline/probe_runs/{p}.json" for p in GRADIENT_TRAINED),
        "metrics/headline/telemetry/demo.json", "metrics/headline/cohort.json",
        "metrics/headline/footprint.json", "metrics/headline/sizing.json",
        "metrics/headline/encoders/ecg.json", "metrics/headline/encoders/echo.json",
        "metrics/headline/token_cost.json", "metrics/headline/extract.json",
        "metrics/headline/planted_ceiling.json", "metrics/headline/fused_vs_concat.json"}
    head = {k: v for doc in metrics.values() for k, v in flatten(doc).items()}

    def detail(rel: str) -> dict:
        return flatten(json.loads((built_project / "metrics" / rel).read_text()))

    for probe in PROBES:
        ev = detail(f"eval/{probe}.json")
        assert _keys(ev, "mae") and _keys(ev, "auroc"), f"eval/{probe}: {sorted(ev)}"
        assert {"test.mae_lo", "test.mae_hi"} <= set(ev)        # the CI as scalar keys
        tr = detail(f"train/{probe}.json")
        assert _keys(tr, "wall_clock") and _keys(tr, "peak_rss"), f"train/{probe}: {sorted(tr)}"
        assert head[f"{probe}.test_mae"] == ev["test.mae"]
        assert head[f"{probe}.test_mae_sd"] == ev["test.mae_sd"]
        assert head[f"{probe}.train_eval_s"] == ev["wall_clock_s.total"]
        # The eval file's checkpoint_bytes is seed 0's checkpoint (the files in
        # models/<probe>/); the footprint counts every byte DVC tracks there, the seed
        # replicas under replicas/r<k>/ included.
        model_dir = built_project / "models" / probe
        seed0 = sum(f.stat().st_size for f in model_dir.iterdir() if f.is_file())
        tracked = sum(f.stat().st_size for f in model_dir.rglob("*") if f.is_file())
        assert ev["checkpoint_bytes"] == seed0, probe
        fp = detail("footprint.json")
        assert fp[f"checkpoints.{probe}.bytes"] == tracked, probe
        replicas = fp[f"checkpoints.{probe}.replicas"]
        assert replicas == 1 + len(list((model_dir / "replicas").glob("r*"))), probe
        assert (tracked > seed0) == (replicas > 1), probe
    assert head["footprint.checkpoint_bytes"] == detail("footprint.json")["checkpoint_bytes_total"]
    tel = detail("telemetry/demo.json")
    assert tel["step_time_s.median"] > 0 and tel["epoch_hours"] > 0
    assert any(k.startswith("projection.") for k in tel)
    assert head["demo.epoch_hours"] == tel["epoch_hours"]
    assert head["demo.eta_hours"] == tel["eta.remaining_calendar_hours"]   # target_epochs set
    for probe in GRADIENT_TRAINED:
        pt = detail(f"telemetry/probe_{probe}.json")
        assert pt["step_time_s.median"] > 0 and "epoch_hours" in pt, probe
        assert head[f"{probe}.step_time_s"] == pt["step_time_s.median"]
        assert head[f"{probe}.active_s"] == pt["active_hours"] * 3600
    sizing = detail("sizing.json")
    import pyarrow.parquet as pq

    has_ecg = pq.read_table(built_project / "data/manifest.parquet", columns=["has_ecg"])
    assert sizing["scenarios.paired_cohort.models.ecg.records"] == sum(
        has_ecg.column("has_ecg").to_pylist())
    bench = detail("encoders/ecg.json")
    assert bench["tokens_per_record"] == 93 and bench["flops_per_record"] > 0   # first 5 s
    assert head["ecg_encoder.tokens_per_record"] == 93
    assert sizing["ask.storage_bytes"] == head["ask.storage_bytes"] == (
        sizing["scenarios.paired_cohort.models.ecg.records"] * 93 * 512 * 4 * 2)
    assert head["manifest.rows"] == 120                                       # TINY_PARAMS
    assert all((built_project / f"metrics/missing/{p}.json").is_file() for p in PROBES)


def test_exp_show_has_few_columns_on_a_fresh_clone(built_project, pipeline_env, tmp_path):
    # What a person sees in `dvc exp show` on a fresh clone after `dvc repro`: every
    # metrics key is a column, and so is every dep path.
    clone = tmp_path / "clone"
    git(tmp_path, pipeline_env, "clone", "-q", str(built_project), str(clone))
    header = dvc(clone, pipeline_env, "exp", "show", "--csv").stdout.splitlines()[0].split(",")
    rows = json.loads(dvc(clone, pipeline_env, "exp", "show", "--json").stdout)
    names = {"metrics": set(), "params": set()}
    deps = set()
    for row in rows:
        data = row.get("data") or {}
        for kind, found in names.items():
            for path, entry in (data.get(kind) or {}).items():
                found.update((path, k) for k in flatten(entry.get("data") or {}))
        deps.update(data.get("deps") or {})
    fixed = {"Experiment", "rev", "typ", "Created", "parent"}
    assert len(header) == len(fixed) + len(names["metrics"]) + len(names["params"]) + len(deps)
    assert 60 <= len(names["metrics"]) <= 92, sorted(names["metrics"])   # extract: up to 7
    # each stage lists its own verb files (editing one verb re-runs only its stages): 14 more
    # source paths than one verbs/ folder, the price of the narrower re-runs; 2 more for
    # output_set.py and verbs/probe_metrics.py (issue 35); extract adds its record list,
    # metrics/sizing.json, its verb files and src/rightsize/{encoders,extraction}; 9 more:
    # the machine fingerprint (machine.json, machine_disk.json, machine.py,
    # verbs/machine.py), the substituted-values check (stage_values.json, stage_values.py,
    # verbs/check_params.py), compare (verbs/compare.py) and the cohort's data/cohort_files;
    # 1 more: the committed detection table the report reads at N > 1 tokens
    assert len(deps) <= 66, sorted(deps)
    # headline keys are unique, so DVC heads their columns with the key alone
    assert "fused.test_mae" in header and "demo.epoch_hours" in header
    assert not [h for h in header if h.startswith("metrics/")
                and h.split(":")[0] in {p for p, _ in names["metrics"]}]


def test_plots_show_renders_curves(built_project, pipeline_env, tmp_path):
    out = json.loads(dvc(built_project, pipeline_env, "plots", "show", "--json", "-o",
                         str(tmp_path / "dvc_plots")).stdout)   # nothing left in the project
    assert not out.get("errors"), out.get("errors")
    plots = out["data"]
    epochs = {"echo": 3, "concat": 3, "fused": 3}  # TINY_PARAMS
    for probe in PROBES:
        rows = plots[f"metrics/curves/{probe}.csv"][0]["content"]["data"]["values"]
        fields = {r["field"] for r in rows}
        assert fields == {"train_loss", "val_loss"}, fields
        if probe in epochs:
            assert len({r["epoch"] for r in rows}) == epochs[probe]
    assert "metrics/telemetry/demo_val.csv" in plots


@pytest.mark.parametrize(
    ("key", "value", "changed"),
    [
        # token_cost measures the fused probe's train + evaluate: its params re-run each count
        ("train.fused.epochs", 2, {"train@fused", *TOKEN_COST_CASES}),
        # evaluation and the missing-modality test run in the train process (one start-up
        # per probe), so their params re-run the train stages
        ("evaluate.n_bootstrap", 150, {*(f"train@{p}" for p in PROBES), *TOKEN_COST_CASES}),
        ("evaluate.n_bootstrap_missing", 150, {*(f"train@{p}" for p in PROBES),
                                               *TOKEN_COST_CASES}),
        ("train.concat.hidden", 8, {"train@concat"}),
        ("telemetry.gap_s", 500, {"telemetry@demo"}),
    ],
)
def test_param_change_invalidates_only_its_stages(project, pipeline_env, key, value, changed):
    set_params(project, {key: value})
    status = dvc_status(project, pipeline_env)
    assert set(status) == changed
    for stage in changed:
        # DVC names the key as the stage declares it (train.fused for train.fused.epochs).
        declared = [k for entry in status[stage]
                    for k in entry.get("changed deps", {}).get("params.yaml", {})]
        assert declared and all(key == k or key.startswith(k + ".") for k in declared), status


def test_dry_run_after_epochs_change_plans_train_fused_only(project, pipeline_env):
    # `repro --dry` lists the stages changed now; the downstream re-runs that follow a
    # real run are checked in test_pipeline_failures (kill, then repro).
    set_params(project, {"train.fused.epochs": 2})
    planned = set(repro_stages(dvc(project, pipeline_env, "repro", "--dry").stdout))
    assert "train@fused" in planned
    assert not planned & {"train@ecg", "train@echo", "train@concat", "cohort", "demo_run",
                          "telemetry@demo", "sizing"}


def test_gap_change_reruns_exactly_the_telemetry_stage(project, pipeline_env):
    before = (project / "metrics/telemetry/demo.json").read_text()
    set_params(project, {"telemetry.gap_s": 0.5})
    out = dvc(project, pipeline_env, "repro").stdout
    ran = repro_stages(out)
    assert ran[0] == "telemetry@demo"
    assert set(ran) <= {"telemetry@demo", "report"}  # report reads every metrics file
    after = json.loads((project / "metrics/telemetry/demo.json").read_text())
    assert after["gap_s"] == 0.5
    assert (project / "metrics/telemetry/demo.json").read_text() != before
    assert dvc_status(project, pipeline_env) == {}
