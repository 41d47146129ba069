"""The report names the cohort's target (``cohort.target``, recorded by ``rightsize cohort``
in ``metrics/cohort.json``): LVEF and EF ≤ 40 % by default, a team's own otherwise."""

from __future__ import annotations

import json

from report_fixtures import run_report, write_metrics, write_params

from rightsize.cohort.target import TargetConfig
from rightsize.reporting.sources import Source
from rightsize.reporting.target_words import LVEF, mae_axis, target, targets_text

BNP = {"column": "nt_probnp", "name": "NT-proBNP", "unit": "pg/mL", "range": [0.0, 35000.0],
       "threshold": 400.0}


def test_the_reports_default_is_the_cohorts_default():
    assert LVEF == TargetConfig().as_dict()
    assert target(None) == LVEF
    text = targets_text(LVEF)
    assert "LVEF (left-ventricular ejection fraction, in percent;" in text
    assert "test MAE in EF points" in text and "EF ≤ 40 %" in text
    assert "EF ≤ 35 %" in targets_text({**LVEF, "threshold": 35.0})
    assert mae_axis(LVEF) == "test MAE of LVEF (EF points)"


def test_another_target_is_named_with_its_unit_and_threshold(tmp_path):
    data = {"n_subjects": 60, "target": BNP}
    assert target(Source(tmp_path / "cohort.json", data, "ok")) == BNP
    text = targets_text(BNP)
    assert text.startswith("What the probes predict: NT-proBNP (column nt_probnp")
    assert "NT-proBNP ≤ 400 pg/mL" in text and "AUROC" in text and "LVEF" not in text
    assert mae_axis(BNP) == "test MAE of NT-proBNP (pg/mL)"
    assert mae_axis({**BNP, "unit": ""}) == "test MAE of NT-proBNP"


def test_the_built_report_names_the_recorded_target(tmp_path):
    write_metrics(tmp_path / "metrics")
    cohort = tmp_path / "metrics" / "cohort.json"
    cohort.write_text(json.dumps({**json.loads(cohort.read_text()), "target": BNP}))
    write_params(tmp_path / "params.yaml")
    built = run_report(tmp_path)
    assert built.code == 0, built.stderr
    probes = built.md.split("## Probes", 1)[1]
    assert "What the probes predict: NT-proBNP" in probes and "NT-proBNP ≤ 400 pg/mL" in probes
    assert "EF points" not in probes
