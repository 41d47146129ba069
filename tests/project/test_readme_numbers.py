"""README's own figures are measured from the repository, not written by hand (issue 44):
the headline-number count DVC compares and the defaults README quotes from params.yaml."""

from __future__ import annotations

import json
import re

import import_graph as g
import yaml

README = (g.REPO / "README.md").read_text(encoding="utf-8")
PARAMS = yaml.safe_load((g.REPO / "params.yaml").read_text(encoding="utf-8"))


def _numbers(node) -> int:
    """Numeric leaves of a metrics document: what `dvc metrics show` makes a column each."""
    if isinstance(node, dict):
        return sum(_numbers(v) for v in node.values())
    return int(isinstance(node, int | float) and not isinstance(node, bool))


def test_readme_headline_count_is_the_headline_files():
    files = sorted((g.REPO / "metrics/headline").rglob("*.json"))
    assert files
    counted = sum(_numbers(json.loads(f.read_text(encoding="utf-8"))) for f in files)
    said = re.search(r"DVC compares the (\d+) headline numbers", README)
    assert said, "README no longer states the headline count"
    assert int(said.group(1)) == counted, (
        f"README says {said.group(1)} headline numbers, metrics/headline holds {counted}: "
        "update README's sentence after dvc repro")


def test_readme_quotes_the_params_defaults():
    assert f"replicas (default {PARAMS['train']['seeds']})" in README
    assert f"on {PARAMS['ecg_demo']['records']} synthetic ECG-like WFDB records" in README
    sizing = PARAMS["sizing"]
    assert f"({sizing['deadline_h']:g} h / {sizing['margin']:g})" in README


def test_readme_names_the_probe_targets():
    assert "LVEF (regression, test MAE)" in README
    assert "EF ≤ 40 % (classification, AUROC)" in README
