"""Progress on a terminal, silence in logs and with --quiet (real ptys, real verbs).

Subprocess runs give the verb a pty as stderr (``tty=True``) or plain pipes; the torch
verbs run in-process with ``sys.stderr`` on a pty, so torch is imported once.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest
from cli_helpers import no_progress

from rightsize import console
from rightsize.cli import main


def _scalars(demo: Path, tmp: Path) -> list[str]:
    return ["scalars", str(demo), "-o", str(tmp / "s.parquet")]


def _telemetry(demo: Path, tmp: Path) -> list[str]:
    # 1000 records / batch 16 disagrees with the logged epochs: the report warns about it
    return ["telemetry", str(demo), "--train-records", "1000", "--global-batch", "16"]


def _cohort(work: Path, tmp: Path) -> list[str]:
    return ["cohort", "--params", str(work / "params.yaml"), "--out", str(tmp / "m.parquet")]


def test_scalars_on_a_tty_counts_files_read(cli, demo_dir, tmp_path):
    res = cli(_scalars(demo_dir, tmp_path), tty=True)
    assert res.rc == 0, res.err
    assert "files read ..." in res.err                       # drawn before the first file
    assert "files read 8/8 in " in res.err                   # the final state, all files
    assert res.err.endswith("s\r\n")                         # ... and the line is ended
    assert no_progress(res.out) and "13026 points" in res.out  # stdout: only the result


@pytest.mark.parametrize("quiet", [[], ["-q"]], ids=["plain", "quiet"])
def test_scalars_in_a_log_prints_no_progress(cli, demo_dir, tmp_path, quiet):
    res = cli(_scalars(demo_dir, tmp_path) + quiet, tty=False)
    assert res.rc == 0, res.err
    assert res.err == ""
    assert ("13026 points" in res.out) == (not quiet)


@pytest.mark.parametrize("where", ["before", "after"])
def test_quiet_before_or_after_the_verb_silences_a_tty(cli, demo_dir, tmp_path, where):
    args = _telemetry(demo_dir, tmp_path)
    args = ["-q", *args] if where == "before" else [*args, "--quiet"]
    res = cli(args, tty=True)
    assert res.rc == 0, res.err
    assert no_progress(res.err)
    # warnings still show with --quiet, each on its own line
    lines = res.err.splitlines()
    assert lines and all(line.startswith("rightsize: warning: ") for line in lines)
    assert "step time" in res.out.lower()


def test_telemetry_on_a_tty_and_in_a_log(cli, demo_dir, tmp_path):
    tty = cli(_telemetry(demo_dir, tmp_path), tty=True)
    log = cli(_telemetry(demo_dir, tmp_path), tty=False)
    assert tty.rc == log.rc == 0
    assert "files read 8/8 in " in tty.err
    assert no_progress(log.err) and no_progress(tty.out)
    assert tty.out == log.out                                # progress never reaches stdout
    # the warnings are the same lines either way, each starting at column 0 on the tty
    warnings = [w for w in log.err.splitlines() if w]
    assert warnings and all(w.startswith("rightsize: warning: ") for w in warnings)
    assert all(f"\r\n{w}\r\n" in tty.err for w in warnings)


def test_verify_and_rescue_show_their_task_on_a_tty_only(cli, demo_dir, tmp_path):
    res = cli(["verify", str(demo_dir)], tty=True)
    assert res.rc == 0 and "verify: hashing the files listed in " in res.err
    assert "... done in " in res.err and "8 files" in res.out and no_progress(res.out)
    assert cli(["verify", str(demo_dir)], tty=False).err == ""

    res = cli(["rescue", str(demo_dir), str(tmp_path / "copy")], tty=True)
    assert res.rc == 0 and "rescue: copying and hashing the event files of " in res.err
    assert "... done in " in res.err and "8 copied" in res.out
    res = cli(["rescue", str(demo_dir), str(tmp_path / "copy"), "--into-existing"], tty=False)
    assert res.rc == 0 and res.err == "" and "8 unchanged" in res.out


@pytest.mark.parametrize(("tty", "quiet"), [(True, False), (False, False), (True, True)],
                         ids=["tty", "log", "tty-quiet"])
def test_cohort_counts_row_groups_written(cli, work, tmp_path, tty, quiet):
    res = cli(_cohort(work, tmp_path) + (["-q"] if quiet else []), tty=tty)
    assert res.rc == 0, res.err
    assert (tmp_path / "m.parquet").is_file() and res.out == ""
    if tty and not quiet:
        assert "row groups written 4/4 (120/120 rows)" in res.err
    else:
        assert no_progress(res.err)
    assert ("120 subjects" in res.err) == (not quiet)


def test_train_on_a_tty_shows_each_epoch_with_the_curve_losses(work, tmp_path, tty_stderr,
                                                                capsys):
    with tty_stderr() as cap:
        assert main(["train", "echo", "--params", str(work / "params.yaml"),
                     "--manifest", str(work / "manifest.parquet"),
                     "--out", str(tmp_path / "echo"), "--curve", str(tmp_path / "c.csv")]) == 0
    assert "echo: epoch ..." in cap.text and "echo: epoch 2/2 train_loss " in cap.text
    last = (tmp_path / "c.csv").read_text().splitlines()[-1].split(",")
    assert f"train_loss {float(last[1]):.4f} val_loss {float(last[2]):.4f}" in cap.text
    assert capsys.readouterr().out == ""


def _probe_args(work: Path, verb: str, tmp: Path) -> list[str]:
    if verb == "train":
        return ["train", "fused", "--params", str(work / "params.yaml"),
                "--manifest", str(work / "manifest.parquet"), "--out", str(tmp / "fused")]
    return [verb, "fused", "--params", str(work / "params.yaml"),
            "--manifest", str(work / "manifest.parquet"), "--model", str(work / "fused"),
            "--json", str(tmp / "out.json")]


@pytest.mark.parametrize(("verb", "shown"), [
    ("train", "fused: epoch 2/2 train_loss "),
    ("evaluate", "fused: predict and bootstrap 100 resamples ... done in "),
    ("missing-modality", "fused: 3 conditions, paired bootstrap 50 resamples ... done in "),
])
def test_probe_verbs_on_a_tty_quiet_and_in_a_log(work, tmp_path, tty_stderr, capsys,
                                                 verb, shown):
    args = _probe_args(work, verb, tmp_path)
    with tty_stderr() as shown_tty:
        assert main(args) == 0
    assert shown in shown_tty.text
    with tty_stderr() as quiet_tty:
        assert main(["-q", *args]) == 0
    assert quiet_tty.text == ""
    capsys.readouterr()
    assert main(args) == 0                        # capsys: stderr is not a terminal
    out, err = capsys.readouterr()
    assert out == "" and err and no_progress(err)
    assert err.startswith("fused")                # only the one-line summaries


def test_read_scalars_calls_on_file_once_per_file_in_order(demo_dir):
    from rightsize.telemetry.scalars import read_scalars

    seen: list[str] = []
    table = read_scalars(demo_dir, on_file=seen.append)
    assert seen == [f.path for f in table.files] and len(seen) == 8
    assert read_scalars(demo_dir).columns.equals(table.columns)


def test_build_manifest_reports_rows_after_each_row_group(work, tmp_path):
    from rightsize.cohort.build import build_manifest
    from rightsize.cohort.config import CohortConfig
    from rightsize.params import load_block

    cfg = load_block(work / "params.yaml", "cohort", CohortConfig)
    rows: list[int] = []
    report = build_manifest(cfg, tmp_path / "m.parquet", on_chunk=rows.append)
    assert rows == [32, 64, 96, 120] and report.summary.n_rows == 120


def test_runlog_on_epoch_sees_each_curve_row(tmp_path):
    from rightsize.probes.engine.runlog import RunLog

    calls: list[tuple[int, float, float]] = []
    with RunLog(None, tmp_path / "c.csv", time.time(), on_epoch=lambda *a: calls.append(a)) as r:
        for e in (1, 2, 3):
            r.epoch(e, 1 + 4 * (e - 1), [1.0] * 4, [0.0] * 4, 1.0 / e, 2.0 / e, 0.0)
    assert calls == r.rows == [(1, 1.0, 2.0), (2, 0.5, 1.0), (3, 1 / 3, 2 / 3)]


def test_progress_redraws_are_throttled_and_fit_the_width(tty_stderr, monkeypatch):
    console.configure(quiet=False)
    with tty_stderr(cols=40) as cap:
        with console.Progress("items", total=500) as bar:
            assert bar.enabled
            for i in range(500):
                bar(f"a long note about item {i} that will not fit in forty columns")
    draws = cap.text.split("\r\x1b[K")[1:]
    assert len(draws) < 50                                   # not one redraw per item
    assert draws[-1].startswith("items 500/500 a long note about item 499")
    assert all(len(d) <= 39 for d in draws[:-1])             # live lines never wrap

    monkeypatch.setattr(console, "REDRAW_S", 0.0)
    with tty_stderr() as cap:
        with console.Progress("items", total=20) as bar:
            for _ in range(20):
                bar.advance()
    assert cap.text.count("\r\x1b[K") == 1 + 20 + 1          # start, each item, final


def test_warning_during_progress_starts_on_a_clean_line(tty_stderr):
    console.configure(quiet=False)
    with tty_stderr() as cap:
        with console.Progress("files read", total=2) as bar:
            bar("a")
            console.warn("a: damaged record")
            bar("b")
    assert "\r\x1b[Krightsize: warning: a: damaged record\r\n" in cap.text
    assert cap.text.endswith("files read 2/2 b\r\n")


def test_progress_erases_its_line_when_the_work_fails(tty_stderr):
    console.configure(quiet=False)
    with tty_stderr() as cap, pytest.raises(KeyError):
        with console.Progress("files read", total=3) as bar:
            bar("a")
            raise KeyError("x")
    assert cap.text.endswith("\r\x1b[K") and "\n" not in cap.text


def test_progress_is_inert_off_a_terminal_and_when_quiet(capsys, tty_stderr):
    console.configure(quiet=False)
    assert list(console.progress(range(3), total=3, what="n")) == [0, 1, 2]
    assert capsys.readouterr().err == ""
    console.configure(quiet=True)
    try:
        with tty_stderr() as cap, console.task("bootstrap 9 resamples") as bar:
            assert not bar.enabled
    finally:
        console.configure(quiet=False)
    assert cap.text == ""


def test_json_and_text_reports_do_not_depend_on_the_terminal(cli, demo_dir, tmp_path):
    tty = cli(["verify", str(demo_dir), "--json", "-"], tty=True)
    log = cli(["verify", str(demo_dir), "--json", "-"], tty=False)
    assert tty.rc == log.rc == 0 and tty.out == log.out
    assert json.loads(tty.out)["files"] == 8 and json.loads(tty.out)["ok"] is True
