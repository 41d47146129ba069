"""``rightsize.probes.run.train_and_evaluate``: the library call behind ``rightsize train``.

A tiny probe trained through the library writes the same model folder, byte for byte, as
the verb does, and returns the metrics the verb writes: the verb's JSON files are the
library's dicts serialized (stdlib ``json``), once the measured fields (seconds, memory)
are taken from the verb's own run. The epoch wall times it returns are the event file's
(read with TensorBoard's reader)."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest
import yaml
from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

from rightsize.cli import main
from rightsize.output_set import OutputSet
from rightsize.params import load_block
from rightsize.probes.engine.config import EvaluateConfig, TrainConfig
from rightsize.probes.registry import SPECS
from rightsize.probes.run import RunFiles, train_and_evaluate

COHORT = {"source": "synthetic", "seed": 0, "n_subjects": 120,
          "splits": {"train": 80, "val": 16, "test": 24}, "echo_dim": 16, "ecg_dim": 12,
          "max_clips": 3, "row_group_size": 32, "ecg_tokens": 4}
TRAIN = {"seed": 0, "seeds": 2, "threads": 1, "device": "cpu", "batch_size": 32, "lr": 0.003,
         "pca_rank": 8, "ecg": {"alphas": [10.0, 1000.0], "Cs": [1.0]},
         "echo": {"epochs": 2}, "concat": {"epochs": 2, "hidden": 8},
         "fused": {"epochs": 3, "fusion_dim": 8, "heads": 2, "hidden": 8}}
EVALUATE = {"seed": 0, "n_bootstrap": 100, "n_bootstrap_missing": 50, "ci": 0.9}
# what a run measures rather than computes: the verb's values are copied in before comparing
MEASURED = ("wall_clock_s", "peak_rss_mb", "peak_rss_mb_train", "step_s", "bootstrap_s",
            "throughput")


@pytest.fixture(scope="module")
def work(tmp_path_factory):
    root = tmp_path_factory.mktemp("run")
    (root / "params.yaml").write_text(yaml.safe_dump(
        {"cohort": COHORT, "train": TRAIN, "evaluate": EVALUATE}))
    assert main(["cohort", "--params", str(root / "params.yaml"), "--out",
                 str(root / "manifest.parquet"), "--truth", str(root / "truth.parquet"),
                 "-q"]) == 0
    return root


def _files(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes()
            for p in sorted(folder.rglob("*")) if p.is_file()}


def _as_written(got: dict, written: dict) -> str:
    """``got`` serialized as the verb writes JSON, its measured fields the verb's."""
    doc = {k: (written[k] if k in MEASURED else v) for k, v in got.items()}
    return json.dumps(doc, indent=2) + "\n"


@pytest.mark.parametrize("probe", ["ecg", "fused"])
def test_the_library_returns_what_the_train_verb_writes(work, probe):
    params, manifest, truth = (str(work / n) for n in ("params.yaml", "manifest.parquet",
                                                         "truth.parquet"))
    verb = work / f"verb_{probe}"
    assert main(["train", probe, "--params", params, "--manifest", manifest, "--truth", truth,
                 "--out", str(verb / "model"), "--events", str(verb / "events"),
                 "--curve", str(verb / "curve.csv"), "--metrics", str(verb / "train.json"),
                 "--eval-json", str(verb / "eval.json"),
                 "--missing-json", str(verb / "missing.json"), "-q"]) == 0

    lib = work / f"lib_{probe}"
    cfg = load_block(params, "train", TrainConfig)
    ecfg = load_block(params, "evaluate", EvaluateConfig)
    with OutputSet(anchor=str(lib / "model")) as outputs:
        run = train_and_evaluate(probe, manifest, cfg, "cpu", outputs,
                                 RunFiles(str(lib / "model"), str(lib / "events"),
                                          str(lib / "curve.csv")),
                                 ecfg, evaluate=True, missing=True, truth=truth)

    assert _files(lib / "model") == _files(verb / "model")       # weights, replicas, sidecar
    assert (lib / "curve.csv").read_bytes() == (verb / "curve.csv").read_bytes()
    side = json.loads((verb / "model" / "checkpoint.json").read_text())
    assert {k: side[k] for k in run.checkpoint} == run.checkpoint   # + the files' hashes
    for name, got in (("train", run.train), ("eval", run.eval), ("missing", run.missing)):
        text = (verb / f"{name}.json").read_text()
        assert _as_written(got, json.loads(text)) == text, name
    assert run.seeds == [0, 1] and len(run.fits) == 2
    if probe == "fused":
        assert "echo_to_ecg" in run.eval["attention"]            # the truth file was read

    (events,) = (lib / "events").glob("events.out.tfevents.*")
    acc = EventAccumulator(str(events))
    acc.Reload()
    walls = tuple(e.wall_time for e in acc.Scalars("Loss/val_epoch"))
    assert run.val_walls == walls and len(walls) == cfg.epochs(probe)


def test_train_only_returns_no_evaluation(work):
    cfg = load_block(str(work / "params.yaml"), "train", TrainConfig)
    with OutputSet(anchor=str(work / "only" / "model")) as outputs:
        run = train_and_evaluate("ecg", str(work / "manifest.parquet"), cfg, "cpu", outputs,
                                 RunFiles(str(work / "only" / "model")))
    assert run.eval is None and run.missing is None and run.train["probe"] == "ecg"
    assert (work / "only" / "model" / "checkpoint.json").is_file()
    with pytest.raises(ValueError, match="ecfg"):
        train_and_evaluate("ecg", str(work / "manifest.parquet"), cfg, "cpu", outputs,
                           RunFiles(str(work / "x")), evaluate=True)


def test_train_config_is_written_one_field_per_probe_home():
    # the written fields (cfg.fused visible to a reader) are the homes' config classes
    fields = {f.name: f for f in dataclasses.fields(TrainConfig)}
    for name, spec in SPECS.items():
        assert fields[name].type in (spec.config.__name__, spec.config), name
        assert getattr(TrainConfig(), name) == spec.config()
    assert TrainConfig.__module__ == "rightsize.probes.engine.config"


def test_the_train_verb_parses_its_params_file_once(work, monkeypatch):
    # the CLI's whole-file check, the train block and the evaluate block: one YAML parse
    import yaml

    loads = []
    real = yaml.load
    monkeypatch.setattr(yaml, "load", lambda *a, **k: loads.append(1) or real(*a, **k))
    params = work / "params_once.yaml"
    params.write_text((work / "params.yaml").read_text())
    out = work / "once"
    assert main(["train", "ecg", "--params", str(params), "--manifest",
                 str(work / "manifest.parquet"), "--out", str(out / "model"),
                 "--eval-json", str(out / "eval.json"), "-q"]) == 0
    assert len(loads) == 1

    from rightsize.params import load_params

    first = load_params(params)
    first["train"]["seed"] = 99                      # a caller's edit stays its own
    assert load_params(params)["train"]["seed"] == 0 and len(loads) == 1
    params.write_text(params.read_text().replace("seed: 0", "seed: 3", 1))
    assert load_params(params)["cohort"]["seed"] == 3 and len(loads) == 2   # changed: parsed
