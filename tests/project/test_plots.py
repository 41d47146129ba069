"""DVC plots a user expects (issue 44): every data-series plot in dvc.yaml has a title and
axis labels, and the report's PNG figures are declared as image plots where the report writes
them, so `dvc plots diff` compares them across experiments."""

from __future__ import annotations

import shlex

import import_graph as g
import yaml

from rightsize.reporting.build import FIGURE_DIR

DVC = yaml.safe_load((g.REPO / "dvc.yaml").read_text(encoding="utf-8"))
LABELS = ("title", "x_label", "y_label")


def _entries(plots: list) -> list[tuple[str, dict | None]]:
    out = []
    for e in plots or []:
        out.append(next(iter(e.items())) if isinstance(e, dict) else (e, None))
    return out


def _stage_plots() -> list[tuple[str, dict | None]]:
    out = []
    for stage in DVC["stages"].values():
        body = stage.get("do", stage)
        out += _entries(body.get("plots"))
    return out


def test_every_data_plot_has_a_title_and_axis_labels():
    data = [(name, props) for name, props in _entries(DVC["plots"]) + _stage_plots()
            if props is not None]
    names = [name for name, _ in data]
    assert "metrics/curves" in names and "metrics/telemetry/${key}_val.csv" in names
    for name, props in data:
        missing = [k for k in LABELS if not str(props.get(k) or "").strip()]
        assert not missing, f"plot {name}: no {', '.join(missing)}"
        assert props["y_label"] != "y", name


def test_report_figures_are_image_plots_where_the_report_writes_them():
    out = shlex.split(DVC["stages"]["report"]["cmd"])
    folder = out[out.index("--out") + 1]
    images = [name for name, props in _entries(DVC["plots"]) if props is None]
    assert f"{folder}/{FIGURE_DIR}" in images


def test_custom_templates_are_committed_and_every_seed_is_plotted():
    data = dict(_entries(DVC["plots"]))
    seeds = data["metrics/curves_seeds"]
    template = g.REPO / ".dvc/plots" / f"{seeds['template']}.json"
    assert template.is_file()
    assert '"<DVC_METRIC_DATA>"' in template.read_text(encoding="utf-8")
    train = DVC["stages"]["train"]["do"]
    assert "--seed-curves 'metrics/curves_seeds/${item}.csv'" in train["cmd"]

