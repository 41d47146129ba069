"""The ``rightsize scalars`` verb end to end: outputs, exit codes, messages, imports."""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pyarrow.csv as pacsv
import pyarrow.parquet as pq
import pytest

from rightsize.cli import main
from rightsize.telemetry.scalars import read_scalars


@pytest.fixture
def logdir(tmp_path, ev):
    root = tmp_path / "logs"
    ev.write(root / "a" / "events.out.tfevents.100.h.1.0", [
        ev.header(100.0), *[ev.scalars(100.0 + i, i, {"Loss/train": i / 4, "lr": 0.1})
                            for i in range(1, 6)]])
    ev.write(root / "b" / "events.out.tfevents.200.h.2.0.v2", [
        ev.header(200.0), ev.values(201.0, 3, ev.tensor_value("Loss/val", 0.5, "float64"))])
    ev.write(root / "b" / "events.out.tfevents.300.h.3.0", [ev.header(300.0)])
    return root


def test_parquet_round_trips(logdir, tmp_path, capsys):
    out = tmp_path / "out" / "scalars.parquet"
    assert main(["scalars", str(logdir), "-o", str(out)]) == 0
    stdout, stderr = capsys.readouterr()
    assert stdout.strip().startswith("11 points, 3 tags, 2 runs, 3 files (1 header-only)")
    assert stderr == ""
    written = pq.read_table(out)
    assert written.equals(read_scalars(logdir).to_arrow())     # file: the relative path
    assert written.column("run").to_pylist() == ["a"] * 10 + ["b"]


def test_csv_round_trips_with_plain_strings(logdir, tmp_path, capsys):
    out = tmp_path / "scalars.csv"
    assert main(["scalars", str(logdir), "-o", str(out), "--quiet"]) == 0
    assert capsys.readouterr() == ("", "")
    csv = pacsv.read_csv(out)
    want = read_scalars(logdir).to_arrow()
    assert csv.column("tag").to_pylist() == want.column("tag").to_pylist()
    assert csv.column("run").to_pylist() == want.column("run").to_pylist()
    for name in ("step", "file"):
        assert csv.column(name).to_pylist() == want.column(name).to_pylist()
    for name in ("wall_time", "value"):
        np.testing.assert_array_equal(csv.column(name).to_numpy(), want.column(name).to_numpy())


def test_json_summary_and_tag_glob(logdir, tmp_path, capsys):
    out = tmp_path / "loss.parquet"
    assert main(["scalars", str(logdir), "-o", str(out), "--tags", "Loss/*", "--json"]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert {k: summary[k] for k in ("runs", "files", "header_only_files", "tags", "points",
                                    "problems")} == {"runs": 2, "files": 3,
                                                     "header_only_files": 1, "tags": 2,
                                                     "points": 6, "problems": 0}
    assert set(pq.read_table(out).column("tag").to_pylist()) == {"Loss/train", "Loss/val"}


def test_missing_root_exits_2_with_one_line(tmp_path, capsys):
    rc = main(["scalars", str(tmp_path / "absent"), "-o", str(tmp_path / "x.parquet")])
    err = capsys.readouterr().err
    assert rc == 2 and err.count("\n") == 1
    assert err.startswith("rightsize: error: ") and "absent" in err
    assert not (tmp_path / "x.parquet").exists()


def test_directory_without_event_files_fails(tmp_path, capsys):
    (tmp_path / "empty").mkdir()
    rc = main(["scalars", str(tmp_path / "empty"), "-o", str(tmp_path / "x.csv")])
    assert rc == 2
    err = capsys.readouterr().err
    assert err == f"rightsize: error: no event files under {tmp_path / 'empty'}\n"


def test_bad_output_suffix_is_refused(logdir, tmp_path, capsys):
    assert main(["scalars", str(logdir), "-o", str(tmp_path / "x.json")]) == 2
    assert "must end in .parquet or .csv" in capsys.readouterr().err


def test_damage_warns_and_strict_exits_3(logdir, tmp_path, capsys):
    path = logdir / "a" / "events.out.tfevents.100.h.1.0"
    data = bytearray(path.read_bytes())
    data[60] ^= 0xFF                                   # payload of record 1 (step 1)
    path.write_bytes(bytes(data[:-3]))                  # and a torn last record
    out = tmp_path / "x.parquet"
    assert main(["scalars", str(logdir), "-o", str(out)]) == 0
    captured = capsys.readouterr()
    warnings = captured.err.splitlines()
    assert len(warnings) == 2
    assert all(w.startswith("rightsize: warning: a/events") for w in warnings)
    assert "payload_crc at byte 40" in warnings[0] and "truncated_payload" in warnings[1]
    # step 1 (bad CRC) and step 5 (torn) are lost; run b's point follows
    assert pq.read_table(out).column("step").to_pylist() == [2, 2, 3, 3, 4, 4, 3]
    assert "2 problems" in captured.out

    strict_out = tmp_path / "strict.parquet"
    assert main(["scalars", str(logdir), "-o", str(strict_out), "--strict"]) == 3
    err = capsys.readouterr().err
    assert err.startswith(
        "rightsize: error: a/events.out.tfevents.100.h.1.0: payload_crc at byte 40 (")
    assert err.count("\n") == 1 and not strict_out.exists()


def test_verb_imports_no_torch_pandas_or_sklearn(logdir, tmp_path):
    script = (
        "import json, sys\n"
        "from rightsize.cli import main\n"
        f"rc = main(['scalars', {str(logdir)!r}, '-o', {str(tmp_path / 'o.parquet')!r}, '-q'])\n"
        f"rc2 = main(['scalars', {str(logdir)!r}, '-o', {str(tmp_path / 'o.csv')!r}, '-q'])\n"
        "heavy = [m for m in ('torch', 'pandas', 'sklearn') if m in sys.modules]\n"
        "print(json.dumps({'rc': [rc, rc2], 'heavy': heavy}))\n"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          check=True)
    assert json.loads(done.stdout.splitlines()[-1]) == {"rc": [0, 0], "heavy": []}
    assert (tmp_path / "o.parquet").exists() and (tmp_path / "o.csv").exists()


def test_help_has_an_example(capsys):
    with pytest.raises(SystemExit) as info:
        main(["scalars", "--help"])
    assert info.value.code == 0
    assert "rightsize scalars" in capsys.readouterr().out.split("examples:")[1]
