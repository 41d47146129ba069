"""The fp32 route per machine (:mod:`rightsize.probes.accel.gemm_route`): measured once, kept
in a file per machine, read by every later process, and settable for A/B runs."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
import torch

from rightsize.probes.accel import gemm, gemm_route

needs_onednn = pytest.mark.skipif(not gemm.onednn_available(),
                                  reason="this torch build has no oneDNN fp32 linear")


@pytest.fixture
def fresh(tmp_path, monkeypatch):
    """An empty cache folder and no choice made in this process."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    monkeypatch.delenv(gemm_route.ENV, raising=False)
    monkeypatch.setattr(gemm_route, "_CHOICE", {})
    monkeypatch.setattr(gemm, "_BY_THREADS", {})
    monkeypatch.setitem(gemm._FORCED, "onednn", None)
    monkeypatch.setattr(gemm_route.os, "getloadavg", lambda: (0.0, 0.0, 0.0))   # a quiet box
    return tmp_path


@needs_onednn
def test_the_route_is_measured_once_then_read_from_the_machines_file(fresh, monkeypatch):
    first = gemm_route.machine_route(gemm._PRIVATE["linear_pointwise"])
    assert first["route"] in gemm_route.ROUTES and first["source"] == "measured now"
    path = gemm_route.cache_file(first["key"])
    doc = json.loads(path.read_text())
    # the choice follows the measured seconds and the margin
    one = sum(s["onednn_s"] for s in doc["shapes"])
    mkl = sum(s["mkl_s"] for s in doc["shapes"])
    assert doc["route"] == ("mkl" if mkl * gemm_route.MARGIN <= one else "onednn")
    # a later process reads the file: write the other route there and it is taken
    other = "mkl" if doc["route"] == "onednn" else "onednn"
    path.write_text(json.dumps({**doc, "route": other}))
    monkeypatch.setattr(gemm_route, "_CHOICE", {})
    monkeypatch.setattr(gemm, "_BY_THREADS", {})
    assert gemm.onednn_enabled() == (other == "onednn")
    assert gemm.route_words().startswith(f"{other} (measured earlier on this machine")
    # products follow it
    a, b = torch.randn(64, 1024), torch.randn(1024, 1024)
    with torch.profiler.profile() as prof:
        gemm.mm(a, b)
    ops = {e.key for e in prof.key_averages()}
    assert ("mkldnn::_linear_pointwise" in ops) == (other == "onednn")


@needs_onednn
@pytest.mark.parametrize("route", ["onednn", "mkl"])
def test_the_environment_sets_the_route_without_measuring(fresh, monkeypatch, route):
    monkeypatch.setenv(gemm_route.ENV, route)
    monkeypatch.setattr(gemm_route, "measure", lambda *_: pytest.fail("measured"))
    assert gemm.onednn_enabled() == (route == "onednn")
    assert not list(fresh.rglob("gemm-route-*"))               # nothing written
    monkeypatch.setitem(gemm._FORCED, "onednn", route != "onednn")   # forcing wins
    assert gemm.onednn_enabled() == (route != "onednn")


def test_a_bad_route_in_the_environment_is_named(fresh, monkeypatch):
    monkeypatch.setenv(gemm_route.ENV, "openblas")
    with pytest.raises(ValueError, match="RIGHTSIZE_GEMM_ROUTE='openblas'"):
        gemm_route.machine_route(lambda *a: None)


def test_an_unwritable_cache_keeps_the_choice_in_the_process(tmp_path, monkeypatch):
    blocked = tmp_path / "file"
    blocked.write_text("not a folder")
    monkeypatch.setenv("XDG_CACHE_HOME", str(blocked))
    monkeypatch.delenv(gemm_route.ENV, raising=False)
    monkeypatch.setattr(gemm_route, "_CHOICE", {})
    monkeypatch.setattr(gemm_route, "measure", lambda *_: {"route": "mkl"})
    assert gemm_route.machine_route(lambda *a: None)["route"] == "mkl"


def test_a_route_measured_on_a_busy_machine_is_not_kept(fresh, monkeypatch):
    monkeypatch.setattr(gemm_route.os, "getloadavg", lambda: (99.0, 99.0, 99.0))
    monkeypatch.setattr(gemm_route, "measure", lambda *_: {"route": "mkl"})
    doc = gemm_route.machine_route(lambda *a: None)
    assert doc["route"] == "mkl" and doc["load_average"] == 99.0
    assert not list(fresh.rglob("gemm-route-*"))


@needs_onednn
def test_another_process_on_this_machine_reads_the_kept_route(fresh):
    old = torch.get_num_threads()
    torch.set_num_threads(1)                  # the key of a 1-thread process
    try:
        doc = gemm_route.machine_route(gemm._PRIVATE["linear_pointwise"])
    finally:
        torch.set_num_threads(old)
    code = ("import torch; torch.set_num_threads(1); from rightsize.probes.accel import gemm; "
            "print(gemm.route_words())")
    env = {"XDG_CACHE_HOME": str(fresh), "PATH": "/usr/bin:/bin"}
    words = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                           text=True, check=True).stdout.strip()
    assert words == f"{doc['route']} (measured earlier on this machine)"
