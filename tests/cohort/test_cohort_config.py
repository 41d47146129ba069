"""The ``cohort`` params block: defaults and one-line errors naming the dotted key."""

from __future__ import annotations

import pytest

from rightsize.cohort.config import CohortConfig, payload_bytes
from rightsize.errors import ParamsError
from rightsize.params import parse


def test_defaults_are_the_study_geometry() -> None:
    cfg = parse(CohortConfig, {}, "cohort")
    assert (cfg.n_subjects, cfg.echo_dim, cfg.ecg_dim, cfg.max_clips) == (1208, 1024, 768, 8)
    assert cfg.splits.as_dict() == {"train": 829, "val": 131, "test": 248}
    assert cfg.source == "synthetic" and cfg.files.echo is None
    assert cfg.ecg_tokens == 1                      # pooled: today's manifest
    assert payload_bytes(cfg.n_subjects, cfg.max_clips, cfg.echo_dim, cfg.ecg_dim,
                         cfg.ecg_tokens) == 1208 * (8 * 1024 + 768) * 4
    assert payload_bytes(1208, 8, 1024, 768, 186) == 1208 * (8 * 1024 + 186 * 768) * 4
    # row groups: 128 subjects, fewer once they would hold over 16 MiB (token-level ECG)
    assert [cfg.rows_per_group(t) for t in (1, 16, 93, 186)] == [128, 128, 52, 27]


def test_files_block_parses() -> None:
    cfg = parse(CohortConfig, {"source": "files",
                               "files": {"echo": "e.parquet", "ecg": "g.parquet",
                                         "labels": "l.csv"}}, "cohort")
    assert cfg.files.labels == "l.csv"


@pytest.mark.parametrize(("block", "key"), [
    ({"bogus": 1}, "cohort.bogus"),
    ({"n_subjects": -5}, "cohort.n_subjects"),
    ({"max_clips": 0}, "cohort.max_clips"),
    ({"echo_dim": "big"}, "cohort.echo_dim"),
    ({"ecg_dim": 0}, "cohort.ecg_dim"),
    ({"row_group_size": 0}, "cohort.row_group_size"),
    ({"seed": -1}, "cohort.seed"),
    ({"source": "s3"}, "cohort.source"),
    ({"splits": {"train": 10, "val": 1, "test": 1}}, "cohort.splits"),
    ({"splits": {"train": 0, "val": 131, "test": 248}}, "cohort.splits.train"),
    ({"splits": {"train": 829, "val": 131, "holdout": 248}}, "cohort.splits.holdout"),
    ({"missing_echo_frac": 1.0}, "cohort.missing_echo_frac"),
    ({"missing_ecg_frac": -0.1}, "cohort.missing_ecg_frac"),
    ({"noise_sd": -1.0}, "cohort.noise_sd"),
    ({"ef_threshold": 140.0}, "cohort.ef_threshold"),
    ({"n_views": 1}, "cohort.n_views"),
    ({"source": "files"}, "cohort.files.echo"),
    ({"source": "files", "files": {"echo": "e", "ecg": "g"}}, "cohort.files.labels"),
    ({"files": {"echo": "e", "extra": "x"}}, "cohort.files.extra"),
])
def test_bad_values_name_the_key(block: dict, key: str) -> None:
    with pytest.raises(ParamsError) as err:
        parse(CohortConfig, block, "cohort")
    msg = str(err.value)
    assert msg.startswith(f"{key}:"), msg
    assert "\n" not in msg
