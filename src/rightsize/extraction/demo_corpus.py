"""A synthetic ECG corpus in MIMIC-IV-ECG's layout, for the default pipeline and the tests.

``<dir>/record_list.csv`` (``subject_id, study_id, file_name, ecg_time, path``) and
``<dir>/files/p<4 digits>/p<subject>/s<study>/<study>.hea|.dat``: 12 leads, 10 s at
``sample_hz``, WFDB format 16, MIMIC's lead order. Every header carries the comment
``synthetic ECG-like signal written by rightsize, not patient data`` and ``SYNTHETIC.txt``
says so for the folder. One study per subject, ids from 10000000 / 40000000 up.
"""

from __future__ import annotations

import csv
import io
from pathlib import Path

import numpy as np

from rightsize import atomic
from rightsize.encoders.ecg_files import write_ecg
from rightsize.encoders.synthetic_ecg import synthetic_ecg

SYNTHETIC_NOTE = "synthetic ECG-like signal written by rightsize, not patient data"
FIRST_SUBJECT = 10_000_000
FIRST_STUDY = 40_000_000


def record_path(subject: int, study: int) -> str:
    """MIMIC-IV-ECG's relative path of a record (no extension)."""
    return f"files/p{str(subject)[:4]}/p{subject}/s{study}/{study}"


def write_demo_corpus(folder: Path, records: int, seed: int, seconds: float = 10.0,
                      sample_hz: int = 500) -> Path:
    """Write the corpus into ``folder`` (created) and return its record list's path."""
    rng = np.random.default_rng(seed)
    rows = []
    for i in range(records):
        subject, study = FIRST_SUBJECT + i, FIRST_STUDY + i
        rel = record_path(subject, study)
        write_ecg(folder / rel, synthetic_ecg(rng, sample_hz, seconds), sample_hz,
                  comments=(SYNTHETIC_NOTE,))
        rows.append({"subject_id": subject, "study_id": study, "file_name": str(study),
                     "ecg_time": "2180-01-01 00:00:00", "path": rel})
    buf = io.StringIO()
    w = csv.DictWriter(buf, fieldnames=list(rows[0]), lineterminator="\n")
    w.writeheader()
    w.writerows(rows)
    atomic.write_text(folder / "SYNTHETIC.txt",
                      f"{records} records: {SYNTHETIC_NOTE} (seed {seed}).\n")
    listing = folder / "record_list.csv"
    atomic.write_text(listing, buf.getvalue())
    return listing
