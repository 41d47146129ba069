"""``rightsize scalars -o`` keeps provenance (item 10): ``file`` is the event file's path
relative to the folder read, dictionary-encoded in parquet, plain in CSV, as tbparse gives it
and as ``rightsize.read_scalars(...).to_pandas()`` gives it."""

from __future__ import annotations

import pyarrow as pa
import pyarrow.csv as pacsv
import pyarrow.parquet as pq
import pytest
from fault_helpers import event_file, rightsize


@pytest.fixture
def logdir(sandbox):
    root = sandbox / "logs"
    event_file(root / "a", steps=10, host="ha", pid=1)
    event_file(root / "b" / "train", steps=15, host="hb", pid=2, wall=1_700_000_500.0)
    event_file(root / "b" / "train", steps=5, host="hb", pid=3, wall=1_700_001_000.0)
    return root


def rows(table: pa.Table) -> list[tuple]:
    d = table.to_pydict()
    return sorted(zip(d["tag"], d["step"], d["wall_time"], d["file"], strict=True))


def test_scalars_output_file_column_is_the_relative_path(logdir, sandbox):
    from rightsize import read_scalars

    tbparse = pytest.importorskip("tbparse")
    want_df = tbparse.SummaryReader(str(logdir), extra_columns={"wall_time", "dir_name",
                                                                 "file_name"}).scalars
    want = sorted(zip(want_df.tag, want_df.step, want_df.wall_time,
                      [f"{d}/{f}" if d else f for d, f in zip(want_df.dir_name,
                                                              want_df.file_name, strict=True)],
                      strict=True))
    assert len(want) == 10 + 2 + 15 + 3 + 5 + 1

    out = sandbox / "s.parquet"
    res = rightsize(["scalars", logdir, "-o", out])
    assert res.rc == 0, res.err
    got = pq.read_table(out)
    assert got.schema.field("file").type == pa.dictionary(pa.int32(), pa.string())
    assert rows(got) == want
    column = pq.ParquetFile(out).metadata.row_group(0).column(5)
    assert column.path_in_schema == "file"
    assert {"RLE_DICTIONARY", "PLAIN_DICTIONARY"} & set(column.encodings)

    res = rightsize(["scalars", logdir, "-o", sandbox / "s.csv"])
    assert res.rc == 0, res.err
    assert rows(pacsv.read_csv(sandbox / "s.csv")) == want

    api = read_scalars(logdir).to_arrow()               # the notebook API agrees
    assert rows(api) == want
