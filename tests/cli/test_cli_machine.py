"""``rightsize machine``: the fingerprint the measuring stages depend on (issue 41).

The same machine must give the same bytes from any process (the stage runs on every repro),
a changed host or kernel-picking variable a new id; each part is read here straight from
the kernel's files and ``df``, not from the module under test.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from rightsize import machine

ENTRY = [sys.executable, "-c", "import sys; from rightsize.cli import main; sys.exit(main())"]


def _write(tmp_path, env=None, name="m"):
    out, disk = tmp_path / f"{name}.json", tmp_path / f"{name}_disk.json"
    proc = subprocess.run([*ENTRY, "machine", "--json", str(out), "--disk-json", str(disk),
                           "--disk", ".", "--disk", str(tmp_path)], capture_output=True,
                          text=True, env={**os.environ, **(env or {})}, timeout=120)
    assert proc.returncode == 0, proc.stderr
    return out.read_bytes(), disk.read_bytes()


def _cpuinfo(key: str) -> str:
    with open("/proc/cpuinfo", encoding="utf-8") as fh:
        return next(line.split(":", 1)[1].strip() for line in fh
                    if line.split(":")[0].strip() == key)


@pytest.mark.skipif(not os.path.exists("/proc/cpuinfo"), reason="reads Linux /proc")
def test_the_fingerprint_is_this_hosts_and_the_same_bytes_every_time(tmp_path):
    host, disk = _write(tmp_path, name="a")
    assert _write(tmp_path, name="b") == (host, disk)      # another process, same bytes
    doc = json.loads(host)
    fp = doc["fingerprint"]
    assert fp["cpu"]["model_name"] == _cpuinfo("model name")
    assert fp["cpu"]["isa"]["avx2"] == ("avx2" in _cpuinfo("flags").split())
    assert fp["logical_cores"] == os.cpu_count()
    with open("/proc/meminfo", encoding="ascii") as fh:
        kib = int(next(line for line in fh if line.startswith("MemTotal:")).split()[1])
    assert abs(fp["memory_gib"] - kib / 2**20) <= 0.05
    assert f"{os.cpu_count()} core" in doc["words"]
    assert doc == {**machine.stamp(), "fingerprint": machine.host()}    # this process agrees
    df = subprocess.run(["df", "--output=fstype", str(tmp_path)], capture_output=True,
                        text=True, check=True).stdout.split()[-1]
    disks = json.loads(disk)["disks"]
    assert [d["path"] for d in disks] == [".", str(tmp_path)] and disks[1]["fstype"] == df
    for volatile in ("free", "load", "mhz", "time"):
        assert volatile not in host.decode().lower(), volatile


def test_a_new_host_or_thread_setting_is_a_new_id(tmp_path):
    base = json.loads(_write(tmp_path, name="a")[0])["id"]
    salted = json.loads(_write(tmp_path, {machine.TEST_SALT: "other"}, name="b")[0])
    assert salted["id"] != base and "test host other" in salted["words"]
    threads = os.environ.get("OMP_NUM_THREADS") == "3" and "4" or "3"
    assert json.loads(_write(tmp_path, {"OMP_NUM_THREADS": threads}, name="c")[0])["id"] != base


def test_a_figure_says_whether_it_was_measured_here():
    here = machine.stamp()
    assert machine.same_machine({"machine": here}) is True
    assert machine.machine_phrase({"machine": here}) == f"this machine ({here['words']})"
    other = {"id": "0" * 12, "words": "AMD EPYC (AVX-512), 2 cores, 23.5 GiB, no GPU"}
    assert machine.same_machine(other) is False
    assert machine.machine_phrase({"machine": other}) == f"{other['words']} (not this machine)"
    assert machine.same_machine({"hardware": {"cpu": "AMD EPYC"}}) is None
    assert "unrecorded" in machine.machine_phrase({})
    joined = machine.joined_stamp([here, other])
    assert machine.same_machine(joined) is False and other["words"] in joined["words"]
    assert machine.joined_stamp([here, here]) == here


def test_the_report_says_when_the_sizing_came_from_another_machine():
    from pathlib import Path

    from rightsize.reporting.sections_sizing import sizing_answer
    from rightsize.reporting.sources import OK, Source

    text = {"answer": "No GPU needed", "ask": "No GPU needed: 2.4 min on 2 cores.",
            "tables": []}
    other = {"id": "0" * 12, "words": "AMD EPYC (AVX-512), 2 cores, 23.5 GiB, no GPU"}
    here = sizing_answer(Source(Path("metrics/sizing.json"),
                                {"text": text, "machine": machine.stamp()}, OK))
    assert here == ("No GPU needed", text["ask"])
    _, elsewhere = sizing_answer(Source(Path("metrics/sizing.json"),
                                        {"text": text, "machine": other}, OK))
    assert f"measured on {other['words']} (not this machine)" in elsewhere
    assert machine.stamp()["words"] in elsewhere
    _, unstamped = sizing_answer(Source(Path("metrics/sizing.json"), {"text": text}, OK))
    assert "no machine stamp" in unstamped


def test_a_verdict_names_the_other_machine_its_timings_came_from():
    from rightsize.reporting.provenance import elsewhere_words

    other = {"id": "0" * 12, "words": "AMD EPYC (AVX-512), 2 cores, 23.5 GiB, no GPU"}
    assert elsewhere_words({"machine": machine.stamp()}) == ""
    assert elsewhere_words({"machine": other}) == \
        f" (measured on {other['words']} (not this machine))"
    assert elsewhere_words({"hardware": {}}) == " (no machine stamp: maybe not this machine)"
