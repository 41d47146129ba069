"""The report built from a complete metrics tree: files, self-containment, verdicts, figures."""

from __future__ import annotations

import base64
import json
import re

import matplotlib.image as mpimg
import pytest
from report_fixtures import GPUS, PROBES, SCHEDULES, SEGMENTS, demo_telemetry

from rightsize import fmt
from rightsize.machine import stamp
from rightsize.reporting.figures import DPI, FIGSIZE


def test_writes_markdown_html_and_figures(full_build):
    result = json.loads(full_build.stdout)
    assert (full_build.out / "report.md").is_file()
    assert (full_build.out / "report.html").is_file()
    figs = sorted((full_build.out / "figures").glob("*.png"))
    assert [str(p) for p in figs] == sorted(result["figures"])
    names = {p.stem for p in figs}
    assert {"demo_val_curve", "demo_step_time", "demo_timeline", "probe_metrics",
            "missing_modality", "probe_wall_clock", "payload_vs_clips"} <= names
    multi_epoch = {p for p, v in PROBES.items() if v[3] > 1}
    assert {f"probe_{p}_curve" for p in multi_epoch} <= names
    assert {f"probe_{p}_curve" for p in set(PROBES) - multi_epoch}.isdisjoint(names)
    assert "probe ecg: a single fit (one epoch, nothing to plot): train loss" in full_build.md
    assert not [p for p in full_build.out.rglob("*") if p.name.endswith(".tmp")]


def test_figures_are_readable_pngs(full_build):
    for png in (full_build.out / "figures").glob("*.png"):
        img = mpimg.imread(png)
        assert img.shape[:2] == (FIGSIZE[1] * DPI, FIGSIZE[0] * DPI), png.name
        assert img[..., :3].std() > 0.05, f"{png.name} looks blank"
        assert b"http" not in png.read_bytes()


def test_html_is_self_contained(full_build):
    html = full_build.html
    assert "http://" not in html and "https://" not in html
    assert "<script" not in html.lower() and "<link" not in html.lower()
    srcs = re.findall(r'<img[^>]*\ssrc="([^"]*)"', html)
    assert len(srcs) == len(list((full_build.out / "figures").glob("*.png")))
    for src in srcs:
        assert src.startswith("data:image/png;base64,")
        assert base64.b64decode(src.split(",", 1)[1])[:8] == b"\x89PNG\r\n\x1a\n"
    assert len(re.findall(r"<img", html)) == len(srcs)


def test_markdown_links_every_figure(full_build):
    links = re.findall(r"!\[[^\]]*\]\((figures/[^)]+\.png)\)", full_build.md)
    assert links and all((full_build.out / link).is_file() for link in links)
    assert len(links) == len(list((full_build.out / "figures").glob("*.png")))


def test_report_opens_with_verdicts_carrying_measurements(full_build):
    md = full_build.md
    headings = re.findall(r"^#+ .*$", md, flags=re.M)
    assert headings[:2] == ["# Test report", "## Verdicts"]
    verdict_block = md.split("## Verdicts", 1)[1].split("\n## ", 1)[0]

    total = sum(t + e for t, e, _, _ in PROBES.values())
    peak = max(r for _, _, r, _ in PROBES.values())
    gpu_line = next(line for line in verdict_block.splitlines() if "need a GPU" in line)
    assert f"No: all four probes train+evaluate in {fmt.seconds(total)}" in gpu_line
    assert "Intel(R) Xeon(R) CPU @ 2.20GHz" in gpu_line and "1 thread" in gpu_line
    assert f"peak RSS {fmt.megabytes(peak)}" in gpu_line

    # 1M records x 93 tokens x 768 x 4 layers x 2 B = 571 GB: over the 52 GB free and the
    # 500 GB quota. This CPU: 1M / 1.2 records/s + 1M / 200 preprocessing = 233 h > 24 h.
    # One GPU: compute 1.91e16 FLOP at 50-20 % of 312 TFLOP/s = 123-307 s, preprocessing
    # 1M / (200 x 8 cores) = 625 s, reading 120 GB at 1 GB/s = 120 s, writing 571 GB at
    # 500 MB/s = 1,143 s: bound by writing, 19 min, 0.32 GPU-hours. The shards do not fit,
    # so no option is offered (issue 33): the times are said as "were it to fit".
    sizing_line = next(line for line in verdict_block.splitlines() if "re-extraction" in line)
    assert ("The shards do not fit here: needs 571 GB of shards; . has 52 GB free and the "
            "quota is 500 GB: request scratch of 571 GB") in sizing_line
    assert "No GPU needed" not in sizing_line
    assert f"this machine's 1 core ({stamp()['words']}, measured) would take 233 h" in sizing_line
    assert "8 GPUs (A100 SXM, estimated; 8 CPU cores per GPU) would take 19 min" in sizing_line
    assert "ecg 1,000,000 ECG records, source: MIMIC-IV-ECG v1.0 (PhysioNet)" in sizing_line
    assert "fits the 52 GB free at . (when sizing ran): NO" in sizing_line
    assert "the 500 GB quota: NO" in sizing_line
    section = md.split("Re-extraction sizing: cheapest hardware first", 1)[1]
    assert "| tokens per record | 500 | 93 (ecg base, 1 crop, output shapes) |" in section
    assert "| storage | 3.07 TB | 571 GB |" in section

    run_line = next(line for line in verdict_block.splitlines() if "run demo" in line)
    tel = demo_telemetry()
    assert f"One epoch costs {fmt.number(float(GPUS))} GPU-hours" in run_line
    assert f"ran {fmt.number(tel['epochs_run'])} epochs" in run_line
    assert f"{fmt.hours(tel['active_hours'])} active over {fmt.hours(tel['calendar_hours'])}" \
        in run_line
    epochs, compute = SCHEDULES[-1]
    assert f"{epochs} epochs: {fmt.number(compute)} h compute, {fmt.number(compute * GPUS)} GPU-h" \
        in run_line

    verdicts = json.loads(full_build.stdout)["verdicts"]
    assert [v["key"] for v in verdicts] == ["probe_gpu", "fusion", "token_cost", "sizing",
                                            "run:demo"]
    assert verdicts[0]["answer"] == "No"


def test_run_section_tables(full_build):
    md = full_build.md
    run = md.split("### Run demo", 1)[1].split("\n## ", 1)[0]
    for host, pid, first, n, _, _ in SEGMENTS:
        assert re.search(rf"\| {host} \| {pid} \| {first:,}-{first + n - 1:,} \| {n:,} \|", run)
    for epochs, compute in SCHEDULES:
        assert re.search(rf"^\| {epochs} \| {re.escape(fmt.hours(compute))} \| ", run, re.M)
    assert "payload_crc at byte 81920" in run
    assert run.index("preemption timeline") < run.index("| epochs | compute")


def test_probe_sections(full_build):
    md = full_build.md
    probes = md.split("## Probes", 1)[1]
    for name in PROBES:
        assert re.search(rf"^\| {name} \| \d+\.\d+ ± [\d.]+ \(3\) \| 0\.\d+ ± 0\.0100 \(3\) "
                         rf"\| \d+\.\d+ \[\d+\.\d+, \d+\.\d+\] \| 0\.\d+ \[", probes, re.M), name
    assert "| echo absent |" in probes and "| both modalities |" in probes
    # every probe with a missing-modality file, one row each, in train.probes order
    by_probe = probes.split("| probe | both modalities | echo absent | ECG absent | ECG absent "
                            "− both (MAE) |", 1)[1]
    rows = re.findall(r"^\| (\w+) \| ([\d.]+) \[", by_probe, re.M)[:3]
    assert [r[0] for r in rows] == [p for p in PROBES if p != "echo"]
    assert "| ecg | 9.10 [8.60, 10.3] | 9.10 [8.60, 10.3] | 9.80 [8.60, 10.3] | +0.700 |" \
        in by_probe
    assert "ecg and concat read the mean of the ECG tokens (ecg_pooling: mean)" in probes
    assert f"| all probes |   |   | {fmt.seconds(sum(t + e for t, e, _, _ in PROBES.values()))}" \
        in probes
    assert "| 8 (configured) |" in probes
    sizing = probes.split("Re-extraction sizing: cheapest hardware first", 1)[1]
    assert "| ecg_corpus / ecg | 1,000,000 ECG records (MIMIC-IV-ECG v1.0 (PhysioNet)) | 233 h " \
           "(measured), bound by compute | 19 min, 2.54 GPU-h (estimated), bound by writing | " \
           "request scratch first: the shards do not fit the disk | 571 GB (4 x 143 GB, over " \
           "the free space) | " \
           "1.14 TB |" in sizing
    # the GPU-type table (issue 33): one row per preset, GPU-hours per k
    assert "| GPU type (peak, memory; compute) | 1 GPU | 2 GPUs | 4 GPUs | 8 GPUs |" in sizing
    assert "| H100 SXM (989 TF bf16 dense, 80 GB; estimated) |" in sizing
    assert "| L4 (121 TF bf16 dense, 24 GB; estimated) |" in sizing
    assert "| paired_cohort / ecg | 1,173 ECG records (synthetic cohort: manifest) |" in sizing
    assert "| ecg | hubert_ecg base | 93 x 1 = 93 | 19.1 GFLOP | 1.2 at batch 4 | 200 | " \
           f"this machine ({stamp()['words']}), 1 threads" in sizing
    assert "assumes bf16 tensor cores" in sizing
    assert "the target machine's disk must be measured there" in sizing
    assert "| device | cpu |" in probes and "| torch | 2.13.0+cpu |" in probes
    assert "Across seeds" not in md          # only with --seeds-json


@pytest.mark.parametrize("section", ["Telemetry: rescued training runs",
                                     "Probes (synthetic cohort, planted signal)", "Verdicts",
                                     "Sizing", "Extraction"])
def test_html_has_sections_and_nav(full_build, section):
    html = full_build.html
    assert f">{section}</h2>" in html
    anchor = re.search(rf'<h2 id="([^"]+)">{re.escape(section)}</h2>', html).group(1)
    assert f'href="#{anchor}"' in html


def test_nav_names_the_four_parts_in_order(full_build):
    nav = re.search(r"<nav>(.*?)</nav>", full_build.html).group(1)
    assert re.findall(r">([^<]+)</a>", nav) == ["Verdicts", "Telemetry", "Probes", "Sizing",
                                                 "Extraction"]


def test_fusion_verdict_weighs_the_difference_against_seed_spread_and_paired_interval(tmp_path):
    import numpy as np
    from report_fixtures import eval_json, run_report, write_metrics, write_params

    write_metrics(tmp_path / "metrics")
    write_params(tmp_path / "params.yaml")
    line = next(v for v in json.loads(run_report(tmp_path).stdout)["verdicts"]
                if v["key"] == "fusion")
    f, c = eval_json("fused"), eval_json("concat")
    diffs = [c["seeds"][k]["test_mae"] - f["seeds"][k]["test_mae"] for k in ("r0", "r1", "r2")]
    assert line["answer"] == "Yes"
    assert (f"concat − fused = {fmt.number(np.mean(diffs))} ± "
            f"{fmt.number(np.std(diffs, ddof=1))} (mean ± sd): the difference exceeds the seed "
            f"spread") in line["text"]
    assert "interval [0.600, 0.600], which excludes 0" in line["text"]

    # seeds that scatter more than the gap: not distinguishable, said in words
    f["seeds"] = {"r0": {"test_mae": 6.1}, "r1": {"test_mae": 7.9}, "r2": {"test_mae": 5.2}}
    (tmp_path / "metrics/eval/fused.json").write_text(json.dumps(f))
    line = next(v for v in json.loads(run_report(tmp_path).stdout)["verdicts"]
                if v["key"] == "fusion")
    assert line["answer"] == "Not distinguishable"
    assert "does not exceed the seed spread" in line["text"]
    # unpaired resamples (another n_bootstrap): no paired interval is claimed
    f["test"]["n_bootstrap"] = 100
    (tmp_path / "metrics/eval/fused.json").write_text(json.dumps(f))
    text = next(v for v in json.loads(run_report(tmp_path).stdout)["verdicts"]
                if v["key"] == "fusion")["text"]
    assert "no paired bootstrap interval" in text
