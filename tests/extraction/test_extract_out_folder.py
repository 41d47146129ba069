"""extract's output folder and processes (issue 43, items 3, 4, 13, 20): a folder that is not
an extraction is refused, two configurations never write one folder at once, workers die
with a parent killed outright, record-list paths stay under the root."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from extract_fixtures import extract, make_corpus, write_params

from rightsize.errors import InputError


@pytest.fixture
def corpus(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("OMP_NUM_THREADS", "1")
    make_corpus(tmp_path, 4)
    write_params(tmp_path, records=4)
    return tmp_path


def test_a_folder_that_is_not_an_extraction_is_refused(
        corpus: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = corpus / "rescued"
    out.mkdir()
    (out / "SHA256SUMS").write_text("0" * 64 + "  events.out\n")
    (out / "errors.csv").write_text("a user's own table\n")
    (out / "events.out").write_text("telemetry")
    assert extract(corpus, out="rescued") == 2
    assert "rescued: not empty and not an extraction folder (it holds events.out)" in \
        capsys.readouterr().err
    assert (out / "errors.csv").read_text() == "a user's own table\n"
    assert (out / "SHA256SUMS").read_text().endswith("events.out\n")
    assert extract(corpus, out="fresh") == 0
    assert extract(corpus, out="fresh") == 0                     # its own folder: resumed


def test_a_run_of_other_settings_is_refused_while_one_runs(corpus: Path) -> None:
    from rightsize.extraction.config import ExtractConfig
    from rightsize.extraction.plan import make_plan
    from rightsize.extraction.record_list import read_record_list
    from rightsize.params import load_block

    cfg = load_block(corpus / "params.yaml", "extract", ExtractConfig)
    records = read_record_list(Path("corpus/record_list.csv"), Path("corpus"))
    first = make_plan(cfg, records, corpus / "out", None)          # a run of seed 0, holding
    running = (corpus / "out/.extract-run.json").read_text()
    assert str(os.getpid()) in running
    write_params(corpus, records=4, seed=1)
    other = load_block(corpus / "params.yaml", "extract", ExtractConfig)
    with pytest.raises(InputError, match=r"out: another rightsize extract runs into this "
                       rf"folder with other settings \(pid {os.getpid()} on "):
        make_plan(other, records, corpus / "out", None)
    same = make_plan(cfg, records, corpus / "out", (1, 2))        # a task of the same run
    del same, first
    assert not (corpus / "out/.extract-run.json").exists()        # the last to leave
    assert make_plan(other, records, corpus / "out", None).todo == [0, 1]


def test_workers_die_with_a_parent_killed_outright(corpus: Path) -> None:
    import psutil

    write_params(corpus, records=4, workers=2, shard_records=1)
    proc = subprocess.Popen([sys.executable, "-m", "rightsize.cli", "extract", "--params",
                             "params.yaml", "--out", "out", "-q"], cwd=corpus,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    parent = psutil.Process(proc.pid)
    deadline = time.monotonic() + 120
    children: list[psutil.Process] = []
    while time.monotonic() < deadline and len(children) < 3:      # 2 workers + the tracker
        children = parent.children(recursive=True)
        time.sleep(0.2)
    assert len(children) >= 3, children
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    gone, alive = psutil.wait_procs(children, timeout=20)
    assert not alive, [p.cmdline()[:3] for p in alive]


@pytest.mark.parametrize("path,why", [("/etc/passwd", "is absolute"),
                                      ("files/../../outside/r1", "leaves the root (..)")])
def test_record_paths_outside_the_root_exit_4_naming_the_row(
        corpus: Path, capsys: pytest.CaptureFixture[str], path: str, why: str) -> None:
    lst = corpus / "corpus/record_list.csv"
    lines = lst.read_text().splitlines()
    cells = lines[3].split(",")
    lines[3] = ",".join([*cells[:-1], path])
    lst.write_text("\n".join(lines) + "\n")
    assert extract(corpus) == 4
    assert f"record_list.csv: column path: row 3: '{path}' {why}" in capsys.readouterr().err
