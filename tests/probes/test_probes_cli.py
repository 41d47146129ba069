"""The train / evaluate / missing-modality verbs end to end on a real manifest file."""

from __future__ import annotations

import json
import math
import subprocess
import sys

import pytest
import yaml

from rightsize.cli import main
from rightsize.probe_names import PROBES

from .probe_fixtures import EVALUATE, TRAIN, small_manifest


@pytest.fixture(scope="module")
def work(tmp_path_factory):
    """A directory with params.yaml and a small synthetic manifest."""
    root = tmp_path_factory.mktemp("cli")
    small_manifest(root)
    (root / "params.yaml").write_text(yaml.safe_dump({"train": TRAIN, "evaluate": EVALUATE}))
    return root


def _train(root, probe, *extra):
    return main(["train", probe, "--params", str(root / "params.yaml"),
                 "--manifest", str(root / "manifest.parquet"), "--out", str(root / probe),
                 "--events", str(root / "runs" / probe), "--curve", str(root / f"{probe}.csv"),
                 "--metrics", str(root / f"train_{probe}.json"), "-q", *extra])


def _eval(root, verb, probe, out, model=None):
    return main([verb, probe, "--params", str(root / "params.yaml"),
                 "--manifest", str(root / "manifest.parquet"),
                 "--model", str(model or root / probe), "--json", str(out), "-q"])


@pytest.mark.parametrize("probe", ["ecg", "fused"])
def test_train_then_evaluate_writes_stable_keys(work, probe):
    assert _train(work, probe) == 0
    assert (work / probe / "checkpoint.json").is_file()
    assert len(list((work / "runs" / probe).glob("events.out.tfevents.*"))) == 1
    train = json.loads((work / f"train_{probe}.json").read_text())
    assert train["probe"] == probe and train["best_epoch"] >= 1
    assert train["wall_clock_s"]["train"] > 0 and train["peak_rss_mb"] > 0

    assert _eval(work, "evaluate", probe, work / f"eval_{probe}.json") == 0
    m = json.loads((work / f"eval_{probe}.json").read_text())
    for key in ("mae", "mae_lo", "mae_hi", "auroc", "auroc_lo", "auroc_hi"):
        assert isinstance(m["test"][key], float | None)
    assert m["test"]["mae_lo"] <= m["test"]["mae"] <= m["test"]["mae_hi"]
    assert m["test"]["n_bootstrap"] == EVALUATE["n_bootstrap"]
    assert m["val"]["mae"] == pytest.approx(train["val"]["mae"], rel=1e-12)
    assert m["best_epoch"] == train["best_epoch"]
    assert m["params"] == train["params"] > 0
    assert m["checkpoint_bytes"] > 0 and m["mean_predictor_mae"] > 0
    w = m["wall_clock_s"]            # a separate evaluate knows its own process only: the
    assert "train" not in w and w["total"] == w["eval"] > 0   # model folder holds no timings
    assert m["peak_rss_mb"] > 0 and "peak_rss_mb_train" not in m
    assert set(m["hardware"]) >= {"cpu", "cores", "threads", "torch", "device"}
    if probe == "fused":
        ent = m["attention_entropy"]
        assert 0 <= ent["echo_to_ecg"] <= ent["echo_to_ecg_max"] + 1e-9
        assert 0 <= ent["ecg_to_echo"] <= ent["ecg_to_echo_max"] + 1e-9
    else:
        assert "attention_entropy" not in m


def test_evaluate_twice_gives_identical_metrics(work):
    if not (work / "fused" / "checkpoint.json").exists():
        assert _train(work, "fused") == 0
    assert _eval(work, "evaluate", "fused", work / "a.json") == 0
    assert _eval(work, "evaluate", "fused", work / "b.json") == 0
    a, b = (json.loads((work / n).read_text()) for n in ("a.json", "b.json"))
    assert a["test"] == b["test"] and a["attention_entropy"] == b["attention_entropy"]


# What may differ between the evaluation in the train process and a separate evaluate
# process: the clocks, the process's peak RSS and the time the bootstrap took.
_PROCESS_KEYS = ("wall_clock_s", "peak_rss_mb", "peak_rss_mb_train", "bootstrap_s")


@pytest.mark.parametrize("probe", PROBES)
def test_train_eval_and_missing_json_equal_separate_processes(work, tmp_path, probe):
    out = tmp_path / probe
    assert main(["train", probe, "--params", str(work / "params.yaml"), "--manifest",
                 str(work / "manifest.parquet"), "--out", str(out), "-q",
                 "--eval-json", str(tmp_path / "in_train.json"),
                 "--missing-json", str(tmp_path / "mm_in_train.json")]) == 0
    assert _eval(work, "evaluate", probe, tmp_path / "separate.json", model=out) == 0
    assert _eval(work, "missing-modality", probe, tmp_path / "mm_separate.json", model=out) == 0
    for pair in (("in_train.json", "separate.json"), ("mm_in_train.json", "mm_separate.json")):
        a, b = (json.loads((tmp_path / n).read_text()) for n in pair)
        assert set(a) - {"peak_rss_mb_train"} == set(b)     # the training process's own
        assert a["wall_clock_s"]["train"] > 0 and "train" not in b["wall_clock_s"]
        for key in _PROCESS_KEYS:
            a.pop(key, None), b.pop(key, None)
        assert a == b    # every model metric bit for bit, checkpoint bytes, hardware stamp
    mm = json.loads((tmp_path / "mm_in_train.json").read_text())
    if probe == "ecg":       # a one-modality probe: unchanged without the other modality
        assert mm["echo_absent"]["mae"] == mm["both_present"]["mae"]
    elif probe == "echo":
        assert mm["ecg_absent"]["mae"] == mm["both_present"]["mae"]


def test_train_eval_json_bad_evaluate_params_fail_before_training(work, tmp_path, capsys):
    p = tmp_path / "params.yaml"
    p.write_text(yaml.safe_dump({"train": TRAIN, "evaluate": {**EVALUATE, "ci": 1.5}}))
    rc = main(["train", "echo", "--params", str(p), "--manifest",
               str(work / "manifest.parquet"), "--out", str(tmp_path / "m"),
               "--eval-json", str(tmp_path / "e.json")])
    err = capsys.readouterr().err.strip()
    assert rc == 2 and "evaluate.ci" in err and "\n" not in err
    assert not (tmp_path / "m").exists() and not (tmp_path / "e.json").exists()


_IMPORTS = """
import json, sys
from rightsize.cli import main
rc = main(sys.argv[1:])
top = {m.split('.')[0] for m in sys.modules} | ({'pyarrow.compute'} & set(sys.modules))
print(json.dumps({"rc": rc, "modules": sorted(top)}))
"""


@pytest.mark.parametrize(("probe", "absent_train", "absent_eval"), [
    ("ecg", {"torch", "sklearn", "scipy", "pandas", "pyarrow.compute"},
     {"torch", "sklearn", "scipy", "pandas", "pyarrow.compute"}),
    ("echo", {"torch", "sklearn", "scipy", "pandas", "pyarrow.compute"},
     {"torch", "sklearn", "scipy", "pandas", "pyarrow.compute"}),
    ("fused", {"sklearn", "pandas", "pyarrow.compute"}, {"sklearn", "pandas", "pyarrow.compute"}),
])
def test_train_and_evaluate_import_only_what_the_probe_uses(work, tmp_path, probe, absent_train,
                                                             absent_eval):
    """A fresh process: the ECG and echo probes load neither torch nor scikit-learn, scipy
    or pandas (their fits are numpy); the torch probes load neither scikit-learn nor pandas
    (each costs 0.2-1 s of every stage's start-up); no probe loads ``pyarrow.compute`` (~25
    ms: the manifest's split codes are read from the string buffers). Training includes
    evaluation and the missing-modality test, as in dvc.yaml."""
    argv = ["train", probe, "--params", str(work / "params.yaml"), "--manifest",
            str(work / "manifest.parquet"), "--out", str(tmp_path / probe), "-q",
            "--eval-json", str(tmp_path / "e.json"), "--missing-json", str(tmp_path / "m.json")]
    evaluate = ["evaluate", *argv[1:6], "--model", str(tmp_path / probe), "-q",
                "--json", str(tmp_path / "e2.json")]
    for args, absent in ((argv, absent_train), (evaluate, absent_eval)):
        proc = subprocess.run([sys.executable, "-c", _IMPORTS, *args], capture_output=True,
                              text=True, check=False)
        assert proc.returncode == 0, proc.stderr[-2000:]
        doc = json.loads(proc.stdout.strip().splitlines()[-1])
        assert doc["rc"] == 0
        assert not absent & set(doc["modules"]), (args[0], absent & set(doc["modules"]))
        assert ("torch" in doc["modules"]) == (probe == "fused")


def test_missing_modality_keys(work):
    if not (work / "fused" / "checkpoint.json").exists():
        assert _train(work, "fused") == 0
    assert _eval(work, "missing-modality", "fused", work / "mm.json") == 0
    m = json.loads((work / "mm.json").read_text())
    for cond in ("both_present", "echo_absent", "ecg_absent"):
        assert set(m[cond]) >= {"mae", "mae_lo", "mae_hi", "auroc", "auroc_lo", "auroc_hi",
                                "n_bootstrap"}
        assert m[cond]["n_bootstrap"] == EVALUATE["n_bootstrap_missing"]
        assert math.isfinite(m[cond]["mae"])
    assert m["echo_absent"]["mae"] != m["both_present"]["mae"]
    assert {"wall_clock_s", "peak_rss_mb", "hardware"} <= set(m)


def _bad_params(work, tmp_path, **train):
    p = tmp_path / "params.yaml"
    p.write_text(yaml.safe_dump({"train": {**TRAIN, **train}, "evaluate": EVALUATE}))
    return p


@pytest.mark.parametrize("change, key", [
    ({"fused": {**TRAIN["fused"], "epochs": -1}}, "train.fused.epochs"),
    ({"batch_size": 0}, "train.batch_size"),
    ({"device": "tpu"}, "train.device"),
    ({"echo": {"epochs": 3, "layers": 2}}, "train.echo.layers"),
    ({"ecg": {"alphas": [-1.0], "Cs": [1.0]}}, "train.ecg.alphas[0]"),
    ({"seeds": 0}, "train.seeds"),
    ({"seeds": -2}, "train.seeds"),
    ({"seeds": 2.5}, "train.seeds"),
    ({"seeds": "five"}, "train.seeds"),
    ({"seeds": True}, "train.seeds"),
    ({"accelerate": "yes"}, "train.accelerate"),
    ({"fused": {**TRAIN["fused"], "layers": 0}}, "train.fused.layers"),
    ({"fused": {**TRAIN["fused"], "layers": 1.5}}, "train.fused.layers"),
    ({"fused": {**TRAIN["fused"], "attn_scale": 0.0}}, "train.fused.attn_scale"),
    ({"fused": {**TRAIN["fused"], "lead_mix": -1.0}}, "train.fused.lead_mix"),
    ({"fused": {**TRAIN["fused"], "tokens": {"lead_mix": -0.5}}}, "train.fused.tokens.lead_mix"),
    ({"accelerate": 1}, "train.accelerate"),
])
def test_bad_params_exit_2_naming_the_key(work, tmp_path, capsys, change, key):
    params = _bad_params(work, tmp_path, **change)
    rc = main(["train", "fused", "--params", str(params), "--manifest",
               str(work / "manifest.parquet"), "--out", str(tmp_path / "m")])
    err = capsys.readouterr().err.strip()
    assert rc == 2
    assert err.startswith("rightsize: error: ") and key in err and "\n" not in err
    assert not (tmp_path / "m").exists()


def test_unknown_probe_missing_manifest_and_model_exit_2(work, tmp_path, capsys):
    assert main(["train", "lstm", "--params", str(work / "params.yaml"), "--manifest",
                 str(work / "manifest.parquet"), "--out", str(tmp_path / "m")]) == 2
    assert "unknown probe 'lstm'" in capsys.readouterr().err
    assert main(["train", "echo", "--params", str(work / "params.yaml"), "--manifest",
                 str(tmp_path / "nope.parquet"), "--out", str(tmp_path / "m")]) == 2
    assert "nope.parquet" in capsys.readouterr().err
    assert _eval(work, "evaluate", "echo", tmp_path / "e.json", model=tmp_path / "none") == 2
    assert "none: model directory not found" in capsys.readouterr().err
    assert not (tmp_path / "e.json").exists()


@pytest.mark.skipif(__import__("torch").cuda.is_available(), reason="CUDA present")
def test_cuda_without_a_gpu_is_a_one_line_error(work, tmp_path, capsys):
    rc = _train(work, "concat", "--device", "cuda")
    assert rc == 2
    assert "CUDA is not available" in capsys.readouterr().err
    assert main(["train", "echo", "--params", str(work / "params.yaml"), "--manifest",
                 str(work / "manifest.parquet"), "--out", str(tmp_path / "m"),
                 "--device", "gpu"]) == 2
    assert "--device" in capsys.readouterr().err


def test_numpy_probes_run_on_the_cpu_whatever_the_device(work, tmp_path, capsys):
    """ECG and echo are numpy: ``--device cuda`` is not an error for them, says so, and the
    stamp records the CPU (concat with the same flag fails on a machine without CUDA)."""
    for probe in ("ecg", "echo"):
        out = tmp_path / probe
        assert main(["train", probe, "--params", str(work / "params.yaml"), "--manifest",
                     str(work / "manifest.parquet"), "--out", str(out), "--device", "cuda",
                     "--metrics", str(tmp_path / f"{probe}.json")]) == 0
        assert f"{probe}: a numpy probe, runs on the CPU" in capsys.readouterr().err
        doc = json.loads((tmp_path / f"{probe}.json").read_text())
        assert doc["hardware"]["device"] == "cpu"
        assert json.loads((out / "checkpoint.json").read_text())["config"]["device"] == "cpu"


def test_auto_device_falls_back_to_cpu(work, tmp_path):
    from rightsize.probes.engine.train import resolve_device

    if not __import__("torch").cuda.is_available():
        assert resolve_device("auto") == "cpu"
    out = tmp_path / "echo"
    assert main(["train", "echo", "--params", str(work / "params.yaml"), "--manifest",
                 str(work / "manifest.parquet"), "--out", str(out), "--device", "auto",
                 "-q"]) == 0
    side = json.loads((out / "checkpoint.json").read_text())
    assert side["config"]["device"] == resolve_device("auto") and "hardware" not in side
