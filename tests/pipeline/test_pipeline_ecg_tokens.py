"""`dvc exp run -S cohort.ecg_tokens=N` on the tiny project: the token-level experiment."""

from __future__ import annotations

import json

import pytest
import yaml
from pipeline_helpers import PROBES, dvc, repro_stages

from rightsize.experiments import flatten

pytestmark = pytest.mark.slow

TOKENS = 4


def test_exp_run_at_ecg_tokens_trains_every_probe_and_scores_the_planted_token(
        project, pipeline_env):
    out = dvc(project, pipeline_env, "exp", "run", "-S", f"cohort.ecg_tokens={TOKENS}",
              "-n", "tokens").stdout
    ran = set(repro_stages(out))
    assert {"cohort", "footprint", "compare", "report", *(f"train@{p}" for p in PROBES)} <= ran
    assert not {s for s in ran if s.startswith("token_cost")}  # it measures its own counts
    for probe in PROBES:
        train = json.loads((project / f"metrics/train/{probe}.json").read_text())
        ev = json.loads((project / f"metrics/eval/{probe}.json").read_text())
        assert train["arch"]["ecg_tokens"] == ev["ecg_tokens"] == TOKENS, probe
        assert ev["n_seeds"] == 5 and ev["test"]["mae"] > 0, probe
        assert ("attention" in ev) == (probe == "fused"), probe
    assert json.loads((project / "metrics/eval/concat.json").read_text())["ecg_pooling"] == "mean"
    fused = flatten(json.loads((project / "metrics/eval/fused.json").read_text()))
    heads = sorted(k for k in fused if k.startswith("attention.echo_to_ecg.h"))
    recipe = yaml.safe_load((project / "params.yaml").read_text())["train"]["fused"]["tokens"]
    assert heads == [f"attention.echo_to_ecg.h{j}" for j in range(recipe["heads"])]
    arch = json.loads((project / "metrics/train/fused.json").read_text())["arch"]
    assert (arch["fusion_dim"], arch["heads"], arch["hidden"]) == (
        recipe["fusion_dim"], recipe["heads"], recipe["hidden"])   # train.fused.tokens trained
    assert json.loads((project / "metrics/eval/fused.json").read_text())["epochs"] == 3
    assert fused["attention.echo_to_ecg.uniform"] == pytest.approx(1 / (1 + TOKENS))
    assert 0 < fused["attention.echo_to_ecg.best_head_val_mean"] <= 1
    assert {f"attention.echo_to_ecg.r{k}.best_head_val" for k in range(5)} <= set(fused)
    shown = json.loads(dvc(project, pipeline_env, "exp", "show", "--json").stdout)
    exp = [r for r in shown if r["rev"] != "workspace"][0]["experiments"][0]["revs"][0]
    # dvc exp show compares the headline: the validation-chosen head's weight across replicas
    metrics = flatten(exp["data"]["metrics"]["metrics/headline/probes/fused.json"]["data"])
    for stat in ("mean", "sd"):
        assert metrics[f"fused.attention_best_head_val_{stat}"] == \
            fused[f"attention.echo_to_ecg.best_head_val_{stat}"]
    # fused against concat, paired by seed: the detail and its headline column
    paired = json.loads((project / "metrics/fused_vs_concat.json").read_text())
    assert paired["n_pairs"] == 5 and paired["seeds"] == [0, 1, 2, 3, 4]
    assert paired["mae_gain_lo"] <= paired["mae_gain_mean"] <= paired["mae_gain_hi"]
    compared = flatten(exp["data"]["metrics"]["metrics/headline/fused_vs_concat.json"]["data"])
    assert compared["fused_vs_concat.mae_gain_mean"] == paired["mae_gain_mean"]
    footprint = json.loads((project / "metrics/footprint.json").read_text())
    assert footprint["ecg_tokens"] == TOKENS
    report = (project / "reports/report.md").read_text()
    assert "Echo→ECG attention on the planted ECG event" in report
    assert "Fused against concat, seed by seed" in report
    assert "the head with the most weight on the planted event in the validation split" in report
    assert "concat read the mean of the ECG tokens" in report


def test_token_cost_stage_measured_every_count(built_project):
    cost = json.loads((built_project / "metrics/token_cost.json").read_text())
    assert sorted(c["ecg_tokens"] for c in cost["cases"].values()) == [1, 3]   # TINY_PARAMS
    for case in cost["cases"].values():
        assert case["train_eval_s"] > case["process_s"] > 0 and not case["measured_whole"]
        assert case["basis"].startswith("extrapolated: 2 of 3 epochs run")
    report = (built_project / "reports/report.md").read_text()
    assert "Is probe training still CPU-light at token-level ECG?** Yes" in report
