"""User mistakes exit 2 (bad input) or 4 (bad data) with one line naming the file or key,
never 1 ("internal"); --debug adds the traceback and keeps the code; SIGTERM exits 143
after removing what was half-written."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest
from fault_helpers import event_file, hidden, killed, rightsize, visible, writes

from rightsize.probe_names import PROBES


def _params_text(project: Path) -> str:
    return (project / "params.yaml").read_text()


@pytest.mark.parametrize(("case", "needle"), [
    ("not_utf8", "not UTF-8 text (byte"),
    ("duplicate", "duplicate key train.seed (first at line"),
    ("unknown_top", "unknown top-level key 'trian'"),
    ("unknown_inner", "train.sede: unknown key"),
])
def test_bad_params_are_exit_2_naming_the_key(case, needle, project, tmp_path):
    params = tmp_path / "params.yaml"
    text = _params_text(project)
    if case == "not_utf8":
        params.write_bytes(text.encode() + b"# caf\xe9\n")
    elif case == "duplicate":
        params.write_text(text.replace("train:\n", "train:\n  seed: 7\n", 1))
    elif case == "unknown_top":
        params.write_text(text + "trian:\n  seed: 1\n")
    else:
        params.write_text(text.replace("train:\n", "train:\n  sede: 7\n", 1))
    res = rightsize(["train", "ecg", "--params", params, "--manifest",
                     project / "manifest.parquet", "--out", tmp_path / "m"])
    assert res.rc == 2 and needle in res.error_line()
    assert case == "unknown_inner" or str(params) in res.error_line()   # (a block's key
    # errors name the dotted key only, as every verb's tests expect)
    assert not (tmp_path / "m").exists()


def test_json_output_that_is_a_directory_or_unwritable_is_exit_2(sandbox, as_user):
    run = sandbox / "run"
    event_file(run)
    assert rightsize(["rescue", run, sandbox / "copy", "-q"]).rc == 0
    (sandbox / "adir").mkdir()
    for verb in (["verify", sandbox / "copy"],
                 ["telemetry", run, "--train-records", "100", "--global-batch", "5"],
                 ["rescue", run, sandbox / "copy2"]):
        res = rightsize([*verb, "--json", sandbox / "adir"])
        assert res.rc == 2 and f"{sandbox / 'adir'}: is a directory" in res.error_line()
    assert not (sandbox / "copy2").exists()
    ro = sandbox / "ro"
    ro.mkdir(mode=0o555)
    res = rightsize(["verify", sandbox / "copy", "--json", ro / "v.json"], user=as_user,
                    home=sandbox)
    assert res.rc == 2 and f"{ro / 'v.json'}: cannot write in {ro}" in res.error_line()
    res = rightsize(["scalars", run, "-o", ro / "s.parquet"], user=as_user, home=sandbox)
    assert res.rc == 2 and str(ro / "s.parquet") in res.error_line()


@pytest.mark.parametrize("probe", [p for p in PROBES[::-1] if p != "fused"])
def test_weights_that_do_not_fit_are_exit_4_naming_the_file(probe, project, tmp_path):
    model = tmp_path / probe
    common = [probe, "--params", project / "params.yaml", "--manifest",
              project / "manifest.parquet"]
    assert rightsize(["train", *common, "--out", model, "-q"]).rc == 0
    if probe == "concat":                                  # tensors of other names
        import torch
        from safetensors.torch import save_file

        weights = model / "weights.safetensors"
        save_file({"x": torch.zeros(3)}, weights)
    else:                                                  # right keys, wrong shapes
        weights = model / "weights.npz"
        with np.load(weights) as npz:
            arrays = {k: np.zeros((3,) * max(npz[k].ndim, 1), npz[k].dtype) for k in npz.files}
        np.savez(weights, **arrays)
    res = rightsize(["evaluate", *common, "--model", model, "--json", tmp_path / "e.json"])
    line = res.error_line()
    assert res.rc == 3 and str(weights) in line
    assert "differs from the hash" in line                 # the hash check names it first;
    side = model / "checkpoint.json"                       # without hashes the load check must
    doc = json.loads(side.read_text())
    doc.pop("contents")
    doc.pop("sidecar_sha256")
    side.write_text(json.dumps(doc))
    res = rightsize(["evaluate", *common, "--model", model, "--json", tmp_path / "e.json"])
    assert res.rc == 4 and str(weights) in res.error_line()
    assert ("cannot load weights" if probe == "concat" else "do not fit the architecture") in \
        res.error_line()


def test_debug_adds_the_traceback_and_keeps_the_exit_code(sandbox):
    (sandbox / "file").write_text("x")
    run = sandbox / "run"
    event_file(run)
    plain = rightsize(["rescue", run, sandbox / "file"])
    debug = rightsize(["--debug", "rescue", run, sandbox / "file"])
    assert plain.rc == debug.rc == 2
    assert "Traceback (most recent call last)" in debug.err
    assert debug.err.splitlines()[-1] == plain.error_line()


def test_sigterm_exits_143_and_leaves_nothing_half_written(sandbox):
    run = sandbox / "run"
    for k in range(3):
        event_file(run / f"r{k}")
    log = writes(sandbox, ["rescue", run, sandbox / "probe"], sandbox / "w.log")
    shutil.rmtree(sandbox / "probe")
    at = next(i for i, w in enumerate(log, 1) if "SHA256SUMS" in w)   # mid-way, staged
    res = killed(sandbox, ["rescue", run, sandbox / "d"], "term", at)
    assert res.rc == 143 and res.error_line() == "rightsize: error: terminated (SIGTERM)"
    assert visible(sandbox) == {"run", "w.log"} and not hidden(sandbox)
