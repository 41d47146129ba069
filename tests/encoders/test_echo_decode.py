"""Echo decoding (issue 33 item 1): a multi-frame JPEG-baseline ultrasound DICOM written and
read back with pydicom; the frames the encoder sees, at the model's input shape."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

pydicom = pytest.importorskip("pydicom", reason="pydicom is a dependency (pyproject.toml)")

from rightsize.encoders.echo_decode import (  # noqa: E402
    FRAME_STEP,
    VIDEO_COLS,
    VIDEO_FRAMES,
    VIDEO_ROWS,
    bench_decode,
    decode_clip,
    frame_indices,
    write_clip,
)
from rightsize.encoders.models import VideoGeometry  # noqa: E402


def test_frames_the_encoder_sees_two_segments_every_second_frame() -> None:
    idx = frame_indices(64, VideoGeometry())
    assert [len(c) for c in idx] == [16, 16]
    assert idx[0][:3] == [8, 10, 12] and idx[1][0] == 24 and idx[1][-1] == 54
    assert all(b - a == FRAME_STEP for c in idx for a, b in zip(c, c[1:], strict=False))
    short = frame_indices(10, VideoGeometry())          # a short video: clamped, never past it
    assert max(max(c) for c in short) == 9


def test_a_written_dicom_is_a_jpeg_multiframe_that_decodes_to_the_model_input(
        tmp_path: Path) -> None:
    path = write_clip(tmp_path / "v.dcm", seed=3, frames=40)
    ds = pydicom.dcmread(path)
    assert ds.file_meta.TransferSyntaxUID == pydicom.uid.JPEGBaseline8Bit
    assert (int(ds.NumberOfFrames), ds.Rows, ds.Columns) == (40, VIDEO_ROWS, VIDEO_COLS)
    x = decode_clip(path, VideoGeometry(resolution=112))
    assert x.shape == (2, 16, 3, 112, 112) and x.dtype == np.float32
    assert 0.0 <= float(x.min()) and float(x.max()) <= 1.0 and float(x.std()) > 0.01
    assert np.allclose(x[:, :, 0], x[:, :, 1], atol=0.05)   # grey speckle stays grey in RGB


def test_bench_decode_reports_a_per_core_rate_and_the_file_size() -> None:
    out = bench_decode(VideoGeometry(resolution=64, frames=4, clips_per_record=1), records=1,
                       repeats=3)
    assert out["records_per_s_per_core"] > 0 and out["record_file_bytes"] > 100_000
    assert out["records_per_s_per_core_min"] <= out["records_per_s_per_core"] \
        <= out["records_per_s_per_core_max"]
    assert "pydicom" in out["steps"] and f"{VIDEO_FRAMES} frames" in out["steps"]
