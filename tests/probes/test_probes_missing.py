"""Missing-modality evaluation of the fused probe on the planted cohort."""

from __future__ import annotations

import math

import numpy as np

from rightsize.probes.engine.data import split_data
from rightsize.probes.evaluation.missing import CONDITIONS, missing_modality


def test_taking_a_modality_away_costs_accuracy_but_stays_finite(fits, cohort, eval_cfg):
    fused = fits["fused"][0].probe
    out = missing_modality(fused, cohort, eval_cfg)
    test = split_data(cohort, "test")
    assert out["n_rows"] == int((test.has_echo & test.has_ecg).sum()) < out["n_test"]
    for cond in CONDITIONS:
        m = out[cond]
        assert all(math.isfinite(m[k]) for k in ("mae", "mae_lo", "mae_hi", "auroc"))
        assert m["n_bootstrap"] == eval_cfg.n_bootstrap_missing
    both, no_echo, no_ecg = (out[c]["mae"] for c in CONDITIONS)
    assert no_echo > 1.1 * both and no_ecg > 1.1 * both
    # a probe that lost a modality should still beat knowing nothing
    assert no_echo < out["mean_predictor_mae"] and no_ecg < out["mean_predictor_mae"]


def test_probe_without_ecg_input_is_unchanged_by_its_absence(fits, cohort, eval_cfg):
    out = missing_modality(fits["echo"][0].probe, cohort, eval_cfg)
    assert out["ecg_absent"] == out["both_present"]


def test_drop_zeroes_and_masks(cohort):
    test = split_data(cohort, "test")
    no_echo = test.drop(echo=True)
    assert not no_echo.clip_mask.any() and not no_echo.echo.any()
    np.testing.assert_array_equal(no_echo.ecg, test.ecg)
    no_ecg = test.drop(ecg=True)
    assert not no_ecg.has_ecg.any() and not no_ecg.ecg.any()
    np.testing.assert_array_equal(no_ecg.clip_mask, test.clip_mask)


def test_no_paired_test_row_gives_a_note_not_an_error(fits, cohort, eval_cfg):
    import dataclasses

    from rightsize.probes.evaluation.missing import NO_PAIRED_ROWS

    no_ecg_in_test = cohort.has_ecg & (cohort.split != 2)
    arrays = dataclasses.replace(cohort, has_ecg=no_ecg_in_test,
                                 ecg=cohort.ecg * no_ecg_in_test[:, None])
    out = missing_modality(fits["fused"][0].probe, arrays, eval_cfg)
    assert out["n_rows"] == 0 and out["note"] == NO_PAIRED_ROWS
    assert not set(CONDITIONS) & set(out)
