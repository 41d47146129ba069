"""The report with missing, partial, unreadable or extra inputs, and its params handling."""

from __future__ import annotations

import json

from report_fixtures import PROBES, run_report, write_metrics, write_params


def test_no_metrics_at_all_says_not_run(tmp_path):
    write_params(tmp_path / "params.yaml")
    built = run_report(tmp_path)
    assert built.code == 0, built.stderr
    md, html = built.md, built.html
    assert "Not run: metrics/telemetry/demo.json is missing" in md
    assert "Not run: metrics/sizing.json is missing" in md
    # report.md writes '<' as '&lt;' (raw '<probe>' would render as an HTML tag and vanish)
    assert "Not run: no metrics/eval/&lt;probe>.json" in md
    assert "Not run: metrics/missing/fused.json is missing" in md
    assert "Not run: metrics/footprint.json is missing" in md
    assert "<img" not in html and "http://" not in html and "https://" not in html
    assert not list((built.out / "figures").glob("*.png")) if (built.out / "figures").exists() \
        else True
    assert [v["answer"] for v in json.loads(built.stdout)["verdicts"]] == ["not run"] * 5
    assert "Not run: metrics/token_cost.json is missing (dvc repro token_cost)." in md


def test_partial_and_unreadable_inputs(tmp_path):
    write_metrics(tmp_path / "metrics")
    write_params(tmp_path / "params.yaml")
    (tmp_path / "metrics/eval/fused.json").unlink()
    (tmp_path / "metrics/curves/echo.csv").unlink()
    (tmp_path / "metrics/telemetry/demo.json").unlink()       # the run falls back to nothing
    (tmp_path / "metrics/footprint.json").write_text('{"manifest_bytes": 1')  # truncated
    built = run_report(tmp_path)
    assert built.code == 0, built.stderr
    md = built.md
    assert "Incomplete: three of four probes measured" in md
    assert "not measured: fused" in md
    assert "| fused | Not run: metrics/eval/fused.json is missing |" in md
    assert "probe echo: Not run: metrics/curves/echo.csv is missing" in md
    assert "Not available: metrics/footprint.json is unreadable" in md
    assert "metrics/footprint.json: unreadable" in built.stderr
    assert "Not run: metrics/telemetry/demo.json is missing" in md
    figs = {p.stem for p in (built.out / "figures").glob("*.png")}
    assert "probe_echo_curve" not in figs and "probe_fused_curve" in figs
    assert not any(n.startswith("demo_") for n in figs)


def test_rebuild_removes_stale_figures(tmp_path):
    write_metrics(tmp_path / "metrics")
    write_params(tmp_path / "params.yaml")
    assert run_report(tmp_path).code == 0
    assert (tmp_path / "reports/figures/demo_timeline.png").is_file()
    (tmp_path / "reports/figures/notes.txt").write_text("kept: not a figure")
    (tmp_path / "metrics/telemetry/demo.json").unlink()
    (tmp_path / "metrics/telemetry/demo_val.csv").unlink()
    assert run_report(tmp_path).code == 0
    assert not (tmp_path / "reports/figures/demo_timeline.png").exists()
    assert (tmp_path / "reports/figures/notes.txt").is_file()
    assert (tmp_path / "reports/figures/probe_metrics.png").is_file()


def test_seeds_json_adds_mean_sd_table(tmp_path):
    write_params(tmp_path / "params.yaml")
    seeds = {"n_rows": 3,
             "rows": [{"name": f"exp-{s}", "rev": "abc", "baseline": s == 0,
                       "params": {"params.yaml:train.seed": s}} for s in range(3)],
             "metrics": {"metrics/eval/fused.json:test.mae":
                         {"n": 3, "mean": 6.1234, "sd": 0.0567, "min": 6.05, "max": 6.2},
                         "metrics/eval/fused.json:test.auroc":
                         {"n": 3, "mean": 0.8712, "sd": None, "min": 0.87, "max": 0.87}}}
    (tmp_path / "seeds.json").write_text(json.dumps(seeds))
    built = run_report(tmp_path, "--seeds-json", str(tmp_path / "seeds.json"))
    assert built.code == 0, built.stderr
    section = built.md.split("## Across seeds", 1)[1]
    assert "across seeds: mean ± sd" in section
    assert "| metrics/eval/fused.json:test.mae | 6.123 ± 0.057 | 6.050 to 6.200 | 3 |" in section
    assert "| metrics/eval/fused.json:test.auroc | 0.8712 ± — |" in section
    assert "params.yaml:train.seed = 0, 1, 2" in section
    assert "across seeds: mean ± sd" in built.html


def test_missing_seeds_file_is_reported(tmp_path):
    write_params(tmp_path / "params.yaml")
    built = run_report(tmp_path, "--seeds-json", str(tmp_path / "nope.json"))
    assert built.code == 0
    assert "## Across seeds" in built.md and "nope.json is missing" in built.md


def test_over_budget_and_gpu_device_verdicts(tmp_path):
    write_metrics(tmp_path / "metrics")
    total = sum(t + e for t, e, _, _ in PROBES.values())
    write_params(tmp_path / "params.yaml", report={"title": "t", "cpu_budget_s": total / 2})
    built = run_report(tmp_path)
    assert built.code == 0, built.stderr
    assert "Yes: on CPU the four probes take" in built.md
    assert "report.cpu_budget_s" in built.md

    ev = tmp_path / "metrics/eval/concat.json"
    data = json.loads(ev.read_text())
    data["hardware"]["device"] = "cuda:0"
    ev.write_text(json.dumps(data))
    built = run_report(tmp_path)
    assert "Not measured on CPU: the probes ran on cuda:0" in built.md


def test_unknown_report_key_is_a_params_error(tmp_path):
    write_params(tmp_path / "params.yaml", report={"title": "t", "colour": "blue"})
    built = run_report(tmp_path)
    assert built.code == 2
    assert "report.colour: unknown key" in built.stderr
    write_params(tmp_path / "params.yaml", report={"cpu_budget_s": -1})
    built = run_report(tmp_path)
    assert built.code == 2 and "report.cpu_budget_s" in built.stderr


def test_runs_discovered_without_telemetry_block(tmp_path):
    write_metrics(tmp_path / "metrics")
    (tmp_path / "params.yaml").write_text("train: {probes: [ecg, echo, concat, fused]}\n")
    built = run_report(tmp_path)
    assert built.code == 0, built.stderr
    assert "### Run demo" in built.md and "### Run probe_" not in built.md


def test_report_flags_metrics_produced_under_different_numerics_stamps(tmp_path):
    write_metrics(tmp_path / "metrics")
    write_params(tmp_path / "params.yaml")
    for probe in PROBES:
        ev = tmp_path / f"metrics/eval/{probe}.json"
        data = json.loads(ev.read_text())
        data["hardware"]["numerics"] = {"isa": {"avx512f": True},
                                        "env": {"OPENBLAS_CORETYPE": "unset"}}
        ev.write_text(json.dumps(data))
    built = run_report(tmp_path)
    assert built.code == 0, built.stderr
    assert "| instruction sets | avx512f |" in built.md    # nested stamp keys, set ones only
    assert "OPENBLAS_CORETYPE" not in built.md and "unset" not in built.md
    assert "different stamps" not in built.md
    ev = tmp_path / "metrics/eval/fused.json"
    data = json.loads(ev.read_text())
    data["hardware"]["numerics"]["env"]["OPENBLAS_CORETYPE"] = "Haswell"
    ev.write_text(json.dumps(data))
    built = run_report(tmp_path)
    assert "different stamps (numerics.env.OPENBLAS_CORETYPE differ" in built.md
    assert "fused: Haswell" in built.md


def test_stamps_differ_only_in_what_applies_to_each_probe(tmp_path):
    """The ECG probe loads no torch and both numpy's and scipy's OpenBLAS: that is no
    difference in numerics; another OpenBLAS kernel is."""
    write_metrics(tmp_path / "metrics")
    write_params(tmp_path / "params.yaml")
    one = "openblas 0.3.31 Haswell, 2 threads"
    for probe in PROBES:
        ev = tmp_path / f"metrics/eval/{probe}.json"
        data = json.loads(ev.read_text())
        ecg = probe == "ecg"
        data["hardware"]["numerics"] = {
            "torch_cpu_capability": "torch not loaded" if ecg else "AVX512",
            "blas": f"{one}; openblas 0.3.30 Haswell, 2 threads" if ecg else one}
        ev.write_text(json.dumps(data))
    built = run_report(tmp_path)
    assert built.code == 0, built.stderr
    assert "ecg: torch not loaded" in built.md            # shown, not flagged
    assert "different stamps" not in built.md
    ev = tmp_path / "metrics/eval/concat.json"
    data = json.loads(ev.read_text())
    data["hardware"]["numerics"]["blas"] = "openblas 0.3.31 SkylakeX, 2 threads"
    ev.write_text(json.dumps(data))
    built = run_report(tmp_path)
    assert "different stamps (numerics.blas differ" in built.md


def test_missing_modality_without_paired_test_rows_says_so(tmp_path):
    write_metrics(tmp_path / "metrics")
    write_params(tmp_path / "params.yaml")
    (tmp_path / "metrics/missing/fused.json").write_text(json.dumps(
        {"probe": "fused", "n_test": 120, "n_rows": 0, "ci": 0.95,
         "note": "no test row has both echo and ECG: nothing to take away"}))
    built = run_report(tmp_path)
    assert built.code == 0, built.stderr
    section = built.md.split("### Missing modality", 1)[1].split("\n### ", 1)[0]
    assert "metrics/missing/fused.json: no test row has both echo and ECG" in section
    assert "| fused |" in section and "| both modalities |" in section   # by-probe table row
