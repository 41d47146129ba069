"""The report at token-level ECG: the verdict on the token_cost stage, how each probe reads
the ECG, the fused probe's attention on the planted token (paragraph and figure), the cost
table."""

from __future__ import annotations

import json

import matplotlib.image as mpimg
import pytest
from report_fixtures import TOKEN_COST, run_report, token_cost_json, write_metrics, write_params

from rightsize import fmt
from rightsize.probe_registry import PROBES

HEADS = {0: (0.204, 0.053, 0.729), 1: (0.904, 0.132, 0.068), 2: (0.192, 0.730, 0.083),
         3: (0.082, 0.033, 0.377)}         # head -> its value at seeds 0, 1, 2


def _planted_node() -> dict:
    node = {f"h{h}": v[0] for h, v in HEADS.items()}
    best = [max(v[k] for v in HEADS.values()) for k in range(3)]
    node.update(best_head=best[0], best_head_index=1, best_head_mean=sum(best) / 3,
                best_head_sd=0.1, best_head_min=min(best), best_head_max=max(best),
                uniform=1 / 17, null=0.039, ecg_tokens=16, n_subjects=237, n_clips=1052)
    for k in range(3):
        node[f"r{k}"] = {**{f"h{h}": v[k] for h, v in HEADS.items()}, "best_head": best[k]}
    return node


@pytest.fixture
def tokens16(tmp_path):
    """A metrics tree of a 16-token experiment (fused with planted-token attention)."""
    write_metrics(tmp_path / "metrics")
    write_params(tmp_path / "params.yaml")
    for probe in PROBES:
        path = tmp_path / "metrics" / "eval" / f"{probe}.json"
        doc = json.loads(path.read_text())
        doc["ecg_tokens"] = 16
        if probe == "fused":
            doc["attention"] = {"echo_to_ecg": _planted_node()}
        path.write_text(json.dumps(doc))
    return tmp_path


def test_token_cost_verdict_and_table(tokens16):
    built = run_report(tokens16)
    assert built.code == 0, built.stderr
    verdict = {v["key"]: v for v in json.loads(built.stdout)["verdicts"]}["token_cost"]
    assert verdict["answer"] == "Yes"
    text = verdict["text"]
    per = ", ".join(f"{fmt.seconds(s)} at {n}" for n, (s, _, _) in TOKEN_COST.items() if n > 1)
    assert text.startswith(f"Yes: probe training at token-level ECG: fused train + evaluate "
                           f"{per} tokens on Intel(R) Xeon(R) CPU @ 2.20GHz, 2 cores, 1 "
                           "thread, torch 2.13.0+cpu (one seed, whole process; extrapolated: "
                           "3 of 50 epochs run")
    assert f"train.seeds 5 at 186 tokens: about {fmt.seconds(5 * 50.9)}" in text
    assert text.endswith("within the CPU budget (60.0 min (3,600 s)): yes.")
    md = built.md
    section = md.split("### Cost at token-level ECG", 1)[1].split("\n### ", 1)[0]
    assert "| 186 | 639 MB | 639 MB | 1.00 s | 50.9 s (extrapolated) | 1,937 MB | fused_tokens |" \
        in section
    assert "(figures/token_cost.png)" in section
    img = mpimg.imread(built.out / "figures" / "token_cost.png")
    assert img[..., :3].std() > 0.05


def test_over_the_budget_the_answer_is_no(tokens16):
    (tokens16 / "metrics" / "token_cost.json").write_text(json.dumps(token_cost_json(scale=20)))
    built = run_report(tokens16)
    verdict = {v["key"]: v for v in json.loads(built.stdout)["verdicts"]}["token_cost"]
    # 5 seeds x 1,018 s at 186 tokens > 3,600 s
    assert verdict["answer"] == "No" and verdict["text"].endswith("(3,600 s)): no.")


def test_ecg_reading_and_planted_token_attention(tokens16):
    built = run_report(tokens16)
    probes = built.md.split("## Probes", 1)[1]
    assert ("ECG input: 16 token(s) per subject. How each probe reads it, as its checkpoint's "
            "arch records: ecg and concat read the mean of the ECG tokens (ecg_pooling: mean); "
            "echo reads no ECG (ecg_pooling: none); fused reads every ECG token as an "
            "echo→ECG attention key, and their mean as the ECG→echo query (ecg_pooling: "
            "attention (echo->ECG); mean (ECG->echo query))") in probes
    section = probes.split("### Echo→ECG attention on the planted ECG event", 1)[1]
    assert ("16 ECG tokens per subject; uniform attention over the null key and the tokens "
            "would put 0.0588 on the planted event's tokens. The best head of each seed puts "
            "0.904, 0.730, 0.729 there") in section
    assert "seed 0's heads: 0.204, 0.904, 0.192, 0.0820" in section
    assert "237 test subjects with an ECG and their 1,052 present clips" in section
    img = mpimg.imread(built.out / "figures" / "planted_token_attention.png")
    assert img[..., :3].std() > 0.05


def test_no_planted_tokens_says_how_to_get_them(tokens16):
    path = tokens16 / "metrics" / "eval" / "fused.json"
    doc = json.loads(path.read_text())
    del doc["attention"]
    path.write_text(json.dumps(doc))
    md = run_report(tokens16).md
    assert "has no attention.echo_to_ecg: train the fused probe with --truth" in md
    assert not (tokens16 / "reports" / "figures" / "planted_token_attention.png").exists()


def test_pooled_ecg_has_no_planted_token_section(tmp_path):
    write_metrics(tmp_path / "metrics")
    write_params(tmp_path / "params.yaml")
    md = run_report(tmp_path).md
    assert "ECG input: 1 token(s) per subject (one pooled vector)." in md
    assert "planted ECG event" not in md


def _ceiling(n: int) -> dict:
    return {"ecg_tokens": n, "ecg_events": min(n, 16), "nearest_code_cosine": 0.58,
            "uniform": 1 / (1 + n),
            "probe_input": {"clip": {"top1": 1.0, "posterior": 0.8}},
            "test_mae": {"oracle": 3.79, "no_token": 8.6}}


def test_ceiling_table_judges_the_probe_at_its_count(tokens16):
    doc = {"pca_rank": 32, "counts": [16, 93], "tokens_16": _ceiling(16), "tokens_93": _ceiling(93)}
    (tokens16 / "metrics" / "eval" / "fused_ceiling.json").write_text(json.dumps(doc))
    section = run_report(tokens16).md.split("### Echo→ECG attention on the planted ECG event",
                                            1)[1].split("\n### ", 1)[0]
    best = sum(max(v[k] for v in HEADS.values()) for k in range(3)) / 3
    rows = [line for line in section.splitlines() if line.startswith("| 16 |")
            or line.startswith("| 93 |")]
    assert len(rows) == 2 and rows[1].startswith("| 93 | 16 |")
    assert f"| {fmt.number(best)} | {fmt.number(best / 0.8)} |" in rows[0]
    assert rows[1].endswith("| — | — | — |")
    assert "an oracle that knows the synthetic generator" in section


def test_missing_ceiling_says_how_to_get_it(tokens16):
    section = run_report(tokens16).md.split("### Echo→ECG attention on the planted ECG event",
                                            1)[1]
    assert "dvc repro planted_ceiling" in section
