"""Echo video decoding, measured: a DICOM-shaped clip read with pydicom, as a re-extraction
would read MIMIC-IV-ECHO.

A record is one echo video stored the way ultrasound cine loops are: a multi-frame DICOM
(Ultrasound Multi-frame Image Storage) whose frames are JPEG baseline, YBR_FULL_422, one
encapsulated fragment per frame. :func:`write_clip` writes a synthetic one (speckle-like
frames, :data:`VIDEO_FRAMES` x :data:`VIDEO_ROWS` x :data:`VIDEO_COLS` x 3 -- an assumed
cine-loop shape, not read from MIMIC's files). :func:`decode_clip` reads it with pydicom
(the Pillow JPEG decoder), decodes only the frames the encoder sees -- ``clips_per_record``
segments of ``frames`` frames every :data:`FRAME_STEP` frames, spread over the video, as
EchoJEPA's ``num_segments`` / ``frame_step`` sample them -- converts them to RGB, resizes each
to ``resolution`` px (bilinear) and scales to [0, 1] float32: ``(clips, frames, 3, res, res)``.

Timed in one process and thread, so records/s is per CPU core; the files were just written
(page cache warm).
"""

from __future__ import annotations

import statistics
import tempfile
from pathlib import Path
from typing import Any

import numpy as np

from rightsize.encoders.file_rate import per_file_rate
from rightsize.encoders.models import VideoGeometry

VIDEO_FRAMES = 64          # frames per cine loop (assumed: ~1-2 s at 30-60 fps)
VIDEO_ROWS, VIDEO_COLS = 600, 800
FRAME_STEP = 2             # EchoJEPA's configs: frame_step 2
JPEG_QUALITY = 90
DISTINCT_FRAMES = 8        # frames generated and encoded per file, then cycled (writing fast)
US_MULTIFRAME = "1.2.840.10008.5.1.4.1.1.3.1"     # Ultrasound Multi-frame Image Storage


def _speckle(rng: np.random.Generator) -> np.ndarray:
    """One RGB frame of multiplicative speckle over a smooth fan-shaped intensity."""
    y, x = np.mgrid[0:VIDEO_ROWS, 0:VIDEO_COLS].astype(np.float32)
    fan = np.clip(1.0 - np.hypot(x - VIDEO_COLS / 2, y) / VIDEO_ROWS, 0, 1)
    gray = np.clip(255 * fan * rng.rayleigh(0.5, (VIDEO_ROWS, VIDEO_COLS)), 0, 255)
    return np.repeat(gray.astype(np.uint8)[..., None], 3, axis=2)


def write_clip(path: Path, seed: int = 0, frames: int = VIDEO_FRAMES) -> Path:
    """Write a synthetic multi-frame JPEG-baseline ultrasound DICOM to ``path``."""
    import io

    from PIL import Image
    from pydicom.dataset import Dataset, FileMetaDataset
    from pydicom.encaps import encapsulate
    from pydicom.uid import JPEGBaseline8Bit, generate_uid

    rng = np.random.default_rng(seed)
    distinct = []                     # a few distinct frames, cycled: decoding cost is per
    for _ in range(min(frames, DISTINCT_FRAMES)):       # frame, so the file decodes the same
        buf = io.BytesIO()
        Image.fromarray(_speckle(rng)).save(buf, format="JPEG", quality=JPEG_QUALITY)
        distinct.append(buf.getvalue())
    jpegs = [distinct[i % len(distinct)] for i in range(frames)]
    meta = FileMetaDataset()
    meta.TransferSyntaxUID = JPEGBaseline8Bit
    meta.MediaStorageSOPClassUID = US_MULTIFRAME
    meta.MediaStorageSOPInstanceUID = generate_uid()
    ds = Dataset()
    ds.file_meta = meta
    ds.SOPClassUID, ds.SOPInstanceUID = US_MULTIFRAME, meta.MediaStorageSOPInstanceUID
    ds.Modality = "US"
    ds.Rows, ds.Columns, ds.NumberOfFrames = VIDEO_ROWS, VIDEO_COLS, frames
    ds.SamplesPerPixel, ds.PhotometricInterpretation = 3, "YBR_FULL_422"
    ds.PlanarConfiguration = 0
    ds.BitsAllocated, ds.BitsStored, ds.HighBit, ds.PixelRepresentation = 8, 8, 7, 0
    ds.PixelData = encapsulate(jpegs)
    ds["PixelData"].VR = "OB"
    ds.save_as(path, enforce_file_format=True)
    return path


def frame_indices(n_frames: int, geometry: VideoGeometry) -> list[list[int]]:
    """Per clip, the frames the encoder sees: ``frames`` every ``FRAME_STEP``, the clips'
    starts spread evenly over the video (clamped to its last frame)."""
    span = geometry.frames * FRAME_STEP
    room = max(0, n_frames - span)
    starts = [round(room * (c + 0.5) / geometry.clips_per_record)
              for c in range(geometry.clips_per_record)]
    return [[min(n_frames - 1, s + FRAME_STEP * i) for i in range(geometry.frames)]
            for s in starts]


def decode_clip(path: Path, geometry: VideoGeometry) -> np.ndarray:
    """One echo DICOM -> ``(clips, frames, 3, resolution, resolution)`` float32 in [0, 1]."""
    import pydicom
    from PIL import Image
    from pydicom.pixels import pixel_array

    ds = pydicom.dcmread(path)
    n = int(getattr(ds, "NumberOfFrames", 1) or 1)
    res = geometry.resolution
    out = np.empty((geometry.clips_per_record, geometry.frames, 3, res, res), dtype=np.float32)
    for c, idx in enumerate(frame_indices(n, geometry)):
        for f, i in enumerate(idx):
            rgb = pixel_array(ds, index=i)                          # (rows, cols, 3) uint8 RGB
            small = Image.fromarray(rgb).resize((res, res), Image.Resampling.BILINEAR)
            out[c, f] = np.asarray(small, dtype=np.float32).transpose(2, 0, 1) / 255.0
    return out


def bench_decode(geometry: VideoGeometry, records: int, repeats: int = 3) -> dict[str, Any]:
    """Records (videos) per second per CPU core of :func:`decode_clip` over fresh files."""
    with tempfile.TemporaryDirectory(prefix="rightsize-echo-") as tmp:
        paths = [write_clip(Path(tmp) / f"video{i:04d}.dcm", seed=i) for i in range(records)]
        file_bytes = round(statistics.mean(p.stat().st_size for p in paths))
        rate = per_file_rate(lambda p: decode_clip(p, geometry), paths, repeats, file_bytes)
    return {
        **rate,
        "steps": f"read a multi-frame JPEG-baseline ultrasound DICOM ({VIDEO_FRAMES} frames of "
                 f"{VIDEO_ROWS}x{VIDEO_COLS} RGB, synthetic speckle) with pydicom, decode the "
                 f"{geometry.clips_per_record} x {geometry.frames} frames the encoder sees "
                 f"(every {FRAME_STEP}th), to RGB, resize to {geometry.resolution} px, scale "
                 f"to [0, 1]",
        "not_measured": "real MIMIC-IV-ECHO files (their frame count, size and compression are "
                        "assumed here), cold-disk reads, network storage",
    }
