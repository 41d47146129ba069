"""The ask's prediction beside an extraction run: a bench of the run's own model measured here,
the wrong bench refused before any work, the shard schedule and the part that missed."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from extract_fixtures import REPO, extract, make_corpus, metrics, write_params

from rightsize.cli import main


@pytest.fixture
def corpus(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("OMP_NUM_THREADS", "1")
    make_corpus(tmp_path, 6)
    write_params(tmp_path)
    return tmp_path


def _bench_here(corpus: Path, worker_threads: int | None = 1) -> Path:
    """``rightsize bench-encoder ecg`` of the run's model (small, batch 2) on this machine."""
    params = yaml.safe_load((corpus / "params.yaml").read_text())
    params["encoder_bench"]["models"]["ecg"].update(size="small", batch_sizes=[2],
                                                    preprocess_records=4,
                                                    worker_threads=worker_threads)
    (corpus / "params.yaml").write_text(yaml.safe_dump(params, sort_keys=False))
    assert main(["bench-encoder", "ecg", "--params", str(corpus / "params.yaml"), "--json",
                 str(corpus / "bench.json"), "-q"]) == 0
    return corpus / "bench.json"


def test_the_prediction_sits_beside_the_run_and_names_the_bench_host(corpus: Path) -> None:
    """The bench measured here (workers' start-up included) predicts the run; the metrics,
    headline and report hold both, each part predicted, and say the bench is this host's."""
    from rightsize.extraction.record_list import shard_sizes
    from rightsize.params import load_block
    from rightsize.reporting.render_md import render_markdown
    from rightsize.reporting.sections_extract import extract_blocks
    from rightsize.reporting.sources import read_json
    from rightsize.sizing.predict import STARTUP
    from rightsize.verbs.extract import _prediction

    bench = _bench_here(corpus)
    b = json.loads(bench.read_text())
    assert b["workers"]["startup_s"] > 0.5 and b["workers"]["threads_per_worker"] == 1
    sizing = REPO / "metrics/sizing.json"
    assert extract(corpus, "--metrics", "m.json", "--headline", "h.json", "--bench",
                   str(bench), "--sizing", str(sizing)) == 0
    m = metrics(corpus / "m.json")
    from rightsize.extraction.config import ExtractConfig

    cfg = load_block(corpus / "params.yaml", "extract", ExtractConfig)
    want = _prediction((b, json.loads(sizing.read_text())["disk"], None), cfg, shard_sizes(6, 2))
    assert m["shard_sizes"] == [2, 2, 2]
    check = m["prediction_check"]
    assert check["predicted_wall_s_low"] == want["wall_s_low"] > b["workers"]["startup_s_min"]
    assert check["predicted_wall_s_high"] == want["wall_s_high"] >= want["wall_s_low"]
    assert set(m["prediction"]["parts"]) == {"compute", "preprocessing", "writing", STARTUP}
    assert check["inside"] == (want["wall_s_low"] <= m["wall_s"] <= want["wall_s_high"])
    assert (check["mispredicted_part"] is None) == check["inside"]
    assert check["bench_machine"]["same"] is True
    head = metrics(corpus / "h.json")["extract"]
    assert head["predicted_wall_s_high"] == want["wall_s_high"] and head["records_done"] == 6
    md = render_markdown(extract_blocks(read_json(corpus / "m.json")), "figures")
    assert f"{want['wall_s_low']:,.1f} s to {want['wall_s_high']:,.1f} s" in md
    assert "The bench was measured on this host" in md
    if not check["inside"]:
        assert f"The part that missed: {check['mispredicted_part']}" in md


def _no_work(corpus: Path) -> None:
    assert not (corpus / "out" / "shards").exists() or \
        not list((corpus / "out" / "shards").iterdir())


@pytest.mark.parametrize("content, words", [
    ("{}", "not an encoder bench file (missing key family)"),
    ("[1]", "not an encoder bench file (a JSON object is expected, got list)"),
])
def test_a_bench_that_is_not_one_is_refused_before_any_work(
        corpus: Path, content: str, words: str, capsys: pytest.CaptureFixture[str]) -> None:
    (corpus / "b.json").write_text(content)
    assert extract(corpus, "--bench", "b.json", "--sizing",
                   str(REPO / "metrics/sizing.json")) == 4
    assert f"b.json: {words}" in capsys.readouterr().err
    _no_work(corpus)


def test_a_sizing_file_without_a_disk_is_refused_before_any_work(
        corpus: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (corpus / "s.json").write_text("[1]")
    assert extract(corpus, "--bench", str(REPO / "metrics/encoders/ecg.json"),
                   "--sizing", "s.json") == 4
    assert "s.json: no disk measurement" in capsys.readouterr().err
    _no_work(corpus)


def _bench_of(corpus: Path, **change: object) -> Path:
    """The committed ECG bench with fields changed (another size, geometry, rate)."""
    b = json.loads((REPO / "metrics/encoders/ecg.json").read_text())
    b.update(change)
    (corpus / "b.json").write_text(json.dumps(b))
    return corpus / "b.json"


@pytest.mark.parametrize("bench, words", [
    ("echo", "the bench measured echojepa vitl; this run extracts HuBERT-ECG small"),
    ("base", "the bench measured hubert_ecg base; this run extracts HuBERT-ECG small"),
])
def test_a_bench_of_another_model_or_size_is_refused_naming_both(
        corpus: Path, bench: str, words: str, capsys: pytest.CaptureFixture[str]) -> None:
    path = REPO / "metrics/encoders" / ("echo.json" if bench == "echo" else "ecg.json")
    assert extract(corpus, "--bench", str(path), "--sizing",
                   str(REPO / "metrics/sizing.json")) == 4
    assert words in capsys.readouterr().err
    _no_work(corpus)


def test_a_bench_of_another_geometry_or_batch_is_refused(
        corpus: Path, capsys: pytest.CaptureFixture[str]) -> None:
    write_params(corpus, size="base", layers=[12])
    b = _bench_of(corpus, geometry={"crops_per_record": 2})
    assert extract(corpus, "--bench", str(b), "--sizing", str(REPO / "metrics/sizing.json")) == 4
    assert "measured 2 crop(s) per record; this run extracts 1" in capsys.readouterr().err
    write_params(corpus, size="base", layers=[12], batch_size=8)
    b = _bench_of(corpus)
    assert extract(corpus, "--bench", str(b), "--sizing", str(REPO / "metrics/sizing.json")) == 4
    err = capsys.readouterr().err
    assert "timed batch sizes [1, 4]; this run encodes batches of 8" in err
    _no_work(corpus)


@pytest.mark.parametrize("run_in, bench_in", [("float32", "bfloat16"), ("bfloat16", "float32")])
def test_a_bench_in_another_compute_dtype_is_refused(
        corpus: Path, run_in: str, bench_in: str, capsys: pytest.CaptureFixture[str]) -> None:
    """The ask predicts the dtype the run computes in: a bench timed in the other is refused."""
    write_params(corpus, size="base", layers=[12], batch_size=4, compute_dtype=run_in)
    b = _bench_of(corpus, compute_dtype=bench_in)
    assert extract(corpus, "--bench", str(b), "--sizing", str(REPO / "metrics/sizing.json")) == 4
    assert (f"the bench computed in {bench_in}; this run computes in {run_in}"
            in capsys.readouterr().err)
    _no_work(corpus)


@pytest.mark.parametrize("field, value", [("records_per_s_min", -5), ("records_per_s", "NaN"),
                                          ("records_per_s_max", "inf")])
def test_a_bench_rate_that_is_not_a_rate_is_refused(
        corpus: Path, field: str, value: object, capsys: pytest.CaptureFixture[str]) -> None:
    write_params(corpus, size="base", layers=[12], batch_size=4)
    b = json.loads((REPO / "metrics/encoders/ecg.json").read_text())
    b[field] = float(value) if isinstance(value, str) else value
    (corpus / "b.json").write_text(json.dumps(b))
    assert extract(corpus, "--bench", "b.json", "--sizing", str(REPO / "metrics/sizing.json")) == 4
    assert f"b.json: {field} must be a positive rate" in capsys.readouterr().err


def test_the_shard_schedule_decides_the_wall_clock() -> None:
    """Four shards of 64, 64, 64, 8 records on two workers: one worker does 128 records, so
    the wall clock is the start-up plus 128 records' time, not 100; parts as the run sums
    them (worker seconds over the workers)."""
    from rightsize.sizing.predict import STARTUP, RunShape, compare, predict_cpu_run

    bench = {"tokens_per_record": 93, "hidden_size": 768, "size": "base",
             "hardware": {"threads": 2},
             "preprocess": {"records_per_s_per_core": 100.0, "record_file_bytes": 0},
             "workers": {"workers": 2, "threads_per_worker": 1, "startup_s_min": 5.0,
                         "startup_s_max": 6.0,
                         "throughput": {"batch_4": {"records_per_s_per_worker": 4.0,
                                                    "records_per_s_per_worker_min": 2.0,
                                                    "records_per_s_per_worker_max": 5.0}}},
             "throughput": {"batch_4": {"batch": 4, "records_per_s": 8.0}}}
    disk = {"write": {"bytes_per_s": 93 * 768 * 2 * 100.0}, "read": None}
    shape = RunShape(2, 1, 4, "base", 1, 12, 1, 2, (64, 64, 64, 8))
    p = predict_cpu_run(bench, shape, disk)
    fast, slow = 1 / 5 + 1 / 100 + 1 / 100, 1 / 2 + 1 / 100 + 1 / 100
    assert p["wall_s_low"] == pytest.approx(5.0 + 128 * fast)
    assert p["wall_s_high"] == pytest.approx(6.0 + 128 * slow)
    assert p["parts"]["compute"]["high_s"] == pytest.approx(200 * 0.5 / 2)
    assert p["parts"][STARTUP]["low_s"] == pytest.approx(5.0 + 28 * fast)
    measured = {"compute": 30.0, "preprocessing": 1.0, "writing": 1.0, STARTUP: 40.0}
    c = compare(p, 90.0, measured)
    assert c["inside"] is False and c["mispredicted_part"] == STARTUP
    assert c["mispredicted_excess_s"] == pytest.approx(40.0 - p["parts"][STARTUP]["high_s"])
