"""The notebook API: ``rightsize.read_scalars(path).to_pandas()`` against tbparse's reader."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest


def test_import_rightsize_loads_no_engine():
    code = ("import sys, rightsize; heavy = [m for m in ('numpy', 'pyarrow', 'pandas', 'torch', "
            "'rightsize.telemetry') if m in sys.modules]; print(heavy); "
            "assert rightsize.read_scalars.__module__ == 'rightsize.telemetry.scalars'")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout
    assert out.strip() == "[]"


def test_to_pandas_is_the_tidy_table_tbparse_gives(tmp_path, ev):
    import rightsize

    tbparse = pytest.importorskip("tbparse")
    runs = {"a": [(1, 0.5), (2, 0.25)], "b/train": [(1, 2.0), (3, 1.0), (3, 0.75)]}
    for i, (run, points) in enumerate(runs.items()):
        ev.write(tmp_path / run / f"events.out.tfevents.{100 + i}.h.1.0",
                 [ev.header(100.0 + i)]
                 + [ev.scalar(200.0 + i + s / 10, s, "loss", v) for s, v in points]
                 + [ev.scalar(300.0 + i, 9, "lr", 0.125)])
    table = rightsize.read_scalars(tmp_path)
    df = table.to_pandas()
    assert list(df.columns) == ["run", "tag", "step", "wall_time", "value", "file"]
    assert df.file.tolist()[:3] == ["a/events.out.tfevents.100.h.1.0"] * 3
    assert table.to_arrow().num_rows == len(df) == 7

    want = tbparse.SummaryReader(str(tmp_path), extra_columns={"wall_time", "dir_name"}).scalars
    want = want.rename(columns={"dir_name": "run"}).assign(run=lambda d: d.run.replace("", "."))
    key = ["run", "tag", "step", "wall_time", "value"]
    got = df[key].astype({"run": str, "tag": str}).sort_values(key).reset_index(drop=True)
    want = want[key].sort_values(key).reset_index(drop=True)
    assert got.run.tolist() == want.run.tolist() and got.tag.tolist() == want.tag.tolist()
    for col in ("step", "wall_time", "value"):
        np.testing.assert_array_equal(got[col].to_numpy(), want[col].to_numpy(), err_msg=col)
