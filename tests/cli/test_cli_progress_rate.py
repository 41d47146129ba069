"""Progress with a rate and the time left, on a terminal and as plain lines in a log.

The arithmetic is checked on a clock the test sets (time is the input, the line the output);
the verbs run for real, with ``RIGHTSIZE_PROGRESS_S`` small so that a log gets its lines.
"""

from __future__ import annotations

import json
import re
import types

import pytest
from cli_helpers import no_progress

from rightsize import console
from rightsize.cli import main


class Clock:
    """A ``time`` stand-in for console whose ``perf_counter`` reads ``now``."""

    def __init__(self) -> None:
        self.now = 1000.0

    def perf_counter(self) -> float:
        return self.now


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> Clock:
    c = Clock()
    monkeypatch.setattr(console, "time", types.SimpleNamespace(perf_counter=c.perf_counter))
    console.configure(quiet=False)
    return c


@pytest.mark.parametrize(("seconds", "text"), [
    (0.0004, "0.0 s"), (0.42, "0.4 s"), (4.23, "4.23 s"), (13.4, "13.4 s"), (119.4, "119 s"),
    (1500, "25 min"), (101160, "28.1 h")])
def test_seconds_text_picks_the_unit(seconds, text):
    assert console.seconds_text(seconds) == text


@pytest.mark.parametrize(("per_s", "text"), [
    (7.94, "7.94 records/s"), (1234.0, "1,234 records/s"), (0.5, "2 s/record"),
    (1 / 150, "2.5 min/record")])
def test_rate_text_turns_slow_rates_into_time_per_item(per_s, text):
    assert console.rate_text(per_s, "records") == text


def test_eta_is_what_is_left_over_the_rate_since_the_first_count(clock, capsys):
    bar = console.Progress("extract:", total=200, unit="records")
    assert bar.mode == "log" and bar.enabled             # capsys: stderr is not a terminal
    clock.now += 4.0
    bar.set(0, "(starting 2 worker(s))")                 # start-up: nothing counted yet
    assert bar.text() == "extract: 0/200 records (starting 2 worker(s))"
    clock.now += 1.0
    bar.set(8)                                           # first count at t = 5 s
    assert bar.rate() is None and bar.text() == "extract: 8/200 records"   # one point: no rate
    clock.now += 10.0
    bar.set(88)                                          # 80 records in 10 s: 8 records/s
    assert bar.rate() == pytest.approx(8.0)
    assert bar.eta_s() == pytest.approx((200 - 88) / 8.0)
    assert bar.text() == "extract: 88/200 records, 8 records/s, ETA 14 s"
    clock.now += 14.0
    bar.set(200)                                         # done: the time taken instead
    assert bar.text() == "extract: 200/200 records in 29 s"
    assert capsys.readouterr().err == ""                 # 29 s < 30 s: no line yet


def test_a_log_gets_a_plain_line_each_interval_and_a_final_line(clock, capsys, monkeypatch):
    monkeypatch.setenv(console.LOG_EVERY_ENV, "30")
    with console.Progress("fused: epoch", total=10, rate_unit="epochs") as bar:
        for epoch in range(1, 11):
            clock.now += 12.0                            # one epoch: 12 s
            bar.set(epoch, f"val_loss {1 / epoch:.2f}")
    lines = capsys.readouterr().err.splitlines()
    assert "\r" not in "".join(lines) and "\x1b[" not in "".join(lines)
    # a line at 36 s (epoch 3), 72 s (6), 108 s (9): not before 30 s after the previous
    assert lines == ["fused: epoch 3/10 val_loss 0.33, 12 s/epoch, ETA 84 s",
                     "fused: epoch 6/10 val_loss 0.17, 12 s/epoch, ETA 48 s",
                     "fused: epoch 9/10 val_loss 0.11, 12 s/epoch, ETA 12 s",
                     "fused: epoch 10/10 val_loss 0.10 in 2 min"]                 # 120 s


def test_a_log_shows_the_total_reached_once(clock, capsys, monkeypatch):
    """A poller that sets the count to the total again (extract's parent does, once per
    poll) gets one final line, not one per poll."""
    monkeypatch.setenv(console.LOG_EVERY_ENV, "0.000001")
    with console.Progress("extract:", total=6, unit="records") as bar:
        for done in (0, 2, 6, 6, 6):
            clock.now += 1.0
            bar.set(done)
    lines = capsys.readouterr().err.splitlines()
    assert lines == ["extract: ...", "extract: 2/6 records", "extract: 6/6 records in 3 s"]


def test_short_work_in_a_log_prints_nothing_and_zero_turns_lines_off(clock, capsys,
                                                                     monkeypatch, tty_stderr):
    with console.task("hashing"):
        clock.now += 29.0
    with console.task("hashing"):
        clock.now += 31.0                                 # lasted the interval: a final line
    assert capsys.readouterr().err == "hashing ... done in 31.0 s\n"
    monkeypatch.setenv(console.LOG_EVERY_ENV, "0")
    assert console.progress_mode() is None
    with console.Progress("items", total=3, unit="items") as bar:
        assert not bar.enabled
        clock.now += 100.0
        bar.advance(3)
    assert capsys.readouterr().err == ""
    with tty_stderr():
        assert console.progress_mode() == "tty"           # 0 is for logs: a terminal redraws


def test_a_terminal_line_keeps_rate_and_eta_and_cuts_the_note(clock):
    bar = console.Progress("files read", total=100, rate_unit="files")
    bar.set(1, "a/very/long/path/to/one/event/file.tfevents")
    clock.now += 1.0
    bar.set(11, "a/very/long/path/to/one/event/file.tfevents")
    line = bar.text(width=60)
    assert len(line) == 60 and line.endswith("..., 10 files/s, ETA 8.9 s")
    assert line.startswith("files read 11/100 a/very")


@pytest.mark.parametrize("value", ["soon", "-1", "nan"])
def test_a_bad_interval_is_one_warning_and_the_default(cli, demo_dir, tmp_path, monkeypatch,
                                                       value):
    monkeypatch.setenv(console.LOG_EVERY_ENV, value)
    res = cli(["scalars", str(demo_dir), "-o", str(tmp_path / "s.parquet")], tty=False)
    assert res.rc == 0 and "13026 points" in res.out
    assert res.err == (f"rightsize: warning: RIGHTSIZE_PROGRESS_S={value!r}: not a number of "
                       "seconds >= 0 (the time between progress lines in a log; 0: none); "
                       "using 30 s\n")
    assert console.log_every_s() == console.LOG_EVERY_S == 30.0


def test_telemetry_in_a_log_prints_files_read_with_rate_and_eta(cli, demo_dir, monkeypatch):
    monkeypatch.setenv(console.LOG_EVERY_ENV, "0.000001")
    args = ["telemetry", str(demo_dir), "--train-records", "96000", "--global-batch", "32",
            "--gap-s", "0.001"]
    log = cli(args, tty=False)
    assert log.rc == 0, log.err
    lines = [x for x in log.err.splitlines() if x.startswith("files read")]
    rate = r"([\d.,]+ files/s|[\d.]+ (s|min|h)/file)"
    assert lines[0].startswith("files read 1/8 ") and "ETA" not in lines[0]   # no rate yet
    assert re.fullmatch(rf"files read 2/8 \S+, {rate}, ETA [\d.]+ (s|min|h)", lines[1])
    assert lines[-1].startswith("files read 8/8 in ") and "\r" not in log.err
    quiet = cli([*args, "-q"], tty=False)
    assert quiet.out == log.out and no_progress(quiet.err)   # -q: warnings only
    assert all(x.startswith("rightsize: warning: ") for x in quiet.err.splitlines())


def test_train_in_a_log_prints_each_epoch_with_time_per_epoch(work, tmp_path, capsys,
                                                               monkeypatch):
    monkeypatch.setenv(console.LOG_EVERY_ENV, "0.000001")
    assert main(["train", "echo", "--params", str(work / "params.yaml"),
                 "--manifest", str(work / "manifest.parquet"),
                 "--out", str(tmp_path / "echo")]) == 0
    out, err = capsys.readouterr()
    assert out == ""
    epochs = [x for x in err.splitlines() if x.startswith("echo: epoch")]
    assert re.fullmatch(r"echo: epoch 1/2 train_loss \S+ val_loss \S+", epochs[0])
    assert re.fullmatch(r"echo: epoch 2/2 train_loss \S+ val_loss \S+ in [\d.]+ s", epochs[-1])
    assert len(epochs) == 2                              # the final state once


def test_token_cost_in_a_log_shows_the_cohort_build_and_the_epochs(cli, tmp_path,
                                                                   monkeypatch):
    import yaml
    from cli_helpers import SMALL_COHORT, SMALL_EVALUATE, SMALL_TRAIN

    (tmp_path / "params.yaml").write_text(yaml.safe_dump(
        {"cohort": SMALL_COHORT, "train": SMALL_TRAIN, "evaluate": SMALL_EVALUATE,
         "token_cost": {"tokens": [1], "epochs_timed": 2}}))
    monkeypatch.setenv(console.LOG_EVERY_ENV, "0.000001")
    res = cli(["token-cost", "--params", "params.yaml", "--tokens", "1", "--json", "out.json",
               "--workdir", "."], tty=False, cwd=tmp_path)
    assert res.rc == 0, res.err
    lines = res.err.splitlines()
    cohort = [x for x in lines if x.startswith("token cost: cohort at 1 ECG token(s), ")]
    assert [x.split(", ")[1].split(" ")[0] for x in cohort] == \
        ["32/120", "64/120", "96/120", "120/120"]           # one line per row group of 32
    assert re.search(r", 64/120 subjects, [\d,.]+ subjects/s, ETA [\d.]+ s$", cohort[1])
    assert re.fullmatch(r".*, 120/120 subjects in [\d.]+ s", cohort[-1])
    assert any(re.fullmatch(r"fused: epoch 2/2 train_loss \S+ val_loss \S+ in [\d.]+ s", x)
               for x in lines)
    assert any(x.startswith("token cost: fused at 1 ECG token(s), one seed ... done in ")
               for x in lines)
    assert json.loads((tmp_path / "out.json").read_text())["case"]["ecg_tokens"] == 1


def test_bench_encoder_steps_say_when_they_started(tmp_path, capsys):
    import yaml

    bench = {"device": "cpu", "repeats": 3, "warmup": 0, "threads": 1,
             "models": {"ecg": {"family": "hubert_ecg", "size": "small", "batch_sizes": [1],
                                "cpu_timing_layers": 1, "preprocess_records": 0}}}
    (tmp_path / "params.yaml").write_text(yaml.safe_dump({"encoder_bench": bench}))
    assert main(["bench-encoder", "ecg", "--params", str(tmp_path / "params.yaml"),
                 "--json", str(tmp_path / "ecg.json")]) == 0
    steps = [x for x in capsys.readouterr().err.splitlines() if x.endswith(" s)")]
    assert [re.sub(r" \(at [\d.]+ s\)$", "", x) for x in steps] == \
        ["ecg: shapes and FLOPs (meta device)", "ecg: batch 1"]
