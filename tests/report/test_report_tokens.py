"""The report at token-level ECG: the verdict on the token_cost stage, how each probe reads
the ECG, the fused probe's attention on the planted token (paragraph and figure), the cost
table."""

from __future__ import annotations

import json

import matplotlib.image as mpimg
import pytest
from report_fixtures import TOKEN_COST, run_report, token_cost_json, write_metrics, write_params

from rightsize import fmt
from rightsize.probe_names import PROBES

HEADS = {0: (0.204, 0.053, 0.729), 1: (0.904, 0.132, 0.068), 2: (0.192, 0.730, 0.083),
         3: (0.082, 0.033, 0.377)}         # head -> its test value at seeds 0, 1, 2
CHOSEN = (1, 2, 3)                          # the head validation chose per seed (seed 2: not
                                            # its best head on test)


def _planted_node() -> dict:
    node = {f"h{h}": v[0] for h, v in HEADS.items()}
    chosen = [HEADS[CHOSEN[k]][k] for k in range(3)]            # 0.904, 0.730, 0.377
    node.update(best_head_val=chosen[0], best_head_val_index=1,
                best_head_val_mean=sum(chosen) / 3, best_head_val_sd=0.1,
                best_head_val_min=min(chosen), best_head_val_max=max(chosen),
                found_share=2 / 3, uniform=1 / 17, null=0.039, ecg_tokens=16,
                n_subjects=237, n_clips=1052, n_val_subjects=131)
    for k in range(3):
        node[f"r{k}"] = {**{f"h{h}": v[k] for h, v in HEADS.items()},
                         "best_head_val": chosen[k], "best_head_val_index": CHOSEN[k]}
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
    assert ("16 ECG tokens per subject. In each seed the head with the most weight on the "
            "planted event in the validation split (131 subjects) is chosen, then read once on "
            "the test split: it puts 0.904, 0.730, 0.377 of its weight on the event's tokens "
            "(mean 0.670 ± 0.100") in section
    assert "found (at least 0.500) in 2 of 3 seeds" in section  # 0.377 < 0.5: not found
    assert "would put 0.0588 there" in section
    assert "0.729" not in section.split("Seed 0's heads")[0]     # seed 2's test-best head
    assert "Seed 0's heads on the test split: 0.204, 0.904, 0.192, 0.0820" in section
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
            "uniform": 1 / (1 + n), "ecg_event_leads": 12, "ecg_event_energy": "split",
            "probe_input": {"clip": {"top1": 1.0, "posterior": 1.0}},
            "test_mae": {"oracle": 3.79, "no_token": 8.6},
            "told_learner": {"planted_weight_mean": 0.887, "planted_weight_sd": 0.02,
                             "null_weight": 6 / n, "uniform": 6 / n, "train_subjects": 829}}


def _section(root) -> str:
    return run_report(root).md.split("### Echo→ECG attention on the planted ECG event",
                                     1)[1].split("\n### ", 1)[0]


def test_references_table_has_no_oracle_ratio_and_the_null_beside_the_learner(tokens16):
    doc = {"pca_rank": 32, "counts": [16, 93], "tokens_16": _ceiling(16), "tokens_93": _ceiling(93)}
    doc["tokens_16"]["blind_learner"] = {"planted_weight_mean": 0.21, "planted_weight_sd": 0.05}
    (tokens16 / "metrics" / "eval" / "fused_ceiling.json").write_text(json.dumps(doc))
    section = _section(tokens16)
    rows = [line for line in section.splitlines() if line.startswith("| 16 |")
            or line.startswith("| 93 |")]
    assert len(rows) == 2 and rows[1].startswith("| 93 | 16 | seen in 12 leads, energy split")
    # the paragraph names the design at the probe's count (16) from the same file
    assert "16 ECG tokens per subject. The planted event is seen in 12 leads, energy split " \
           "over its tokens. In each seed" in section
    chosen = sum(HEADS[CHOSEN[k]][k] for k in range(3)) / 3
    assert f"| 0.887 ± 0.0200 (829 train) | 0.210 ± 0.0500 | {fmt.number(6 / 16)} | " \
           f"{fmt.number(chosen)} ± 0.100 |" in rows[0]
    assert rows[1].endswith("| — | — |")                        # the probe ran at 16 only
    assert "fraction" not in section and "ceiling" not in section.lower()
    assert "told" not in section and "a reference learner given the generator's subspaces" \
        in section
    assert "a check of the data, not a target" in section


def test_missing_inputs_say_how_to_get_them(tokens16):
    section = _section(tokens16)
    assert "dvc repro planted_ceiling" in section and "dvc repro compare" in section
    assert ("the detection table (benchmarks/results/token_detection.json) has not been run"
            in section)


def test_fused_against_concat_paired_by_seed(tokens16):
    doc = {"mae_gain_mean": -0.66, "mae_gain_lo": -0.9, "mae_gain_hi": -0.42, "n_pairs": 3}
    (tokens16 / "metrics" / "fused_vs_concat.json").write_text(json.dumps(doc))
    section = _section(tokens16)
    assert ("concat's test MAE minus the fused probe's is -0.660 LVEF points, 95% interval "
            "-0.900 to -0.420 (Student t over 3 seeds") in section
    assert "the fused probe errs more than concat" in section
    doc.update(mae_gain_lo=-0.1, mae_gain_hi=1.2, mae_gain_mean=0.55)
    (tokens16 / "metrics" / "fused_vs_concat.json").write_text(json.dumps(doc))
    assert "the interval includes 0" in _section(tokens16)


def _cell(leads: int, energy: float, share: float, train: int = 829, tokens: int = 93) -> dict:
    return {"ecg_tokens": tokens, "event_leads": leads, "energy": energy, "found_share": share,
            "train_subjects": train, "energy_key": "cohort.ecg_event_gain"}


def test_detection_sentence_from_the_committed_table(tokens16):
    rows = [_cell(12, 0.5, 0.4), _cell(12, 1.0, 1.0), _cell(12, 2.0, 0.8),
            _cell(3, 0.5, 0.0), _cell(3, 1.0, 0.8), _cell(3, 2.0, 0.6),      # not monotone
            _cell(1, 0.5, 0.0), _cell(1, 1.0, 0.2), _cell(1, 2.0, 1.0),
            _cell(12, 0.5, 1.0, train=3316), _cell(1, 0.5, 1.0, tokens=186),
            {**_cell(12, 0.5, 1.0), "recipe": "pooled"}]     # the sentence is the shipped's
    table = tokens16 / "benchmarks" / "results" / "token_detection.json"
    table.parent.mkdir(parents=True)
    table.write_text(json.dumps({"rows": rows, "hardware": {"cpu": "AMD EPYC 7B13"}}))
    section = _section(tokens16)
    assert ("At 93 tokens, with 829 train subjects, an event seen in 12 leads is found when "
            "its energy (cohort.ecg_event_gain) is ≥ 1.00, one seen in 3 leads at none of the "
            "energies tried (up to 2.00), one seen in 1 lead when ≥ 2.00; below that, the "
            "head does not pick the event out. Found means the head validation chose puts "
            "≥ 0.500 on the event in at least 80% of seeds "
            "(benchmarks/results/token_detection.json, measured on AMD EPYC 7B13).") in section
    # the pooled cohort's recipe's rows give a second sentence of their own
    assert ("With the pooled cohort's fused recipe instead, an event seen in 12 leads is "
            "found when its energy is ≥ 0.500.") in section


def test_lead_counts_with_one_answer_share_a_clause(tokens16):
    rows = [_cell(12, 0.5, 1.0), _cell(3, 0.25, 0.0), _cell(3, 0.5, 1.0), _cell(1, 0.5, 1.0),
            *({**_cell(n, e, share), "recipe": "pooled"}
              for n, e, share in ((12, 0.5, 0.0), (12, 1.0, 1.0), (3, 1.0, 0.9), (1, 0.5, 1.0)))]
    table = tokens16 / "benchmarks" / "results" / "token_detection.json"
    table.parent.mkdir(parents=True)
    table.write_text(json.dumps({"rows": rows, "hardware": {"cpu": "AMD EPYC 7B13"}}))
    section = _section(tokens16)
    assert ("an event seen in 12, 3 or 1 leads is found when its energy "
            "(cohort.ecg_event_gain) is ≥ 0.500; below that") in section
    assert ("With the pooled cohort's fused recipe instead, an event seen in 12 or 3 leads is "
            "found when its energy is ≥ 1.00, one seen in 1 lead when ≥ 0.500.") in section


@pytest.mark.parametrize(("gains", "words"), [
    ([(1.0, 0.7, 1.3), (0.97, 0.6, 1.3)], "the head does not pick the event out, yet the "
     "fused probe still errs less than concat (concat − fused test MAE +0.97 to +1.00, every "
     "95% interval above 0)"),
    ([(0.3, -0.2, 0.8), (0.4, -0.1, 0.9)], "expect no gain over pooled (concat − fused test "
     "MAE +0.30 to +0.40, every 95% interval includes 0)"),
    ([(0.3, -0.2, 0.8), (1.0, 0.7, 1.3)], "the head does not pick the event out; concat − "
     "fused test MAE +0.30 to +1.00, 1 of 2 95% intervals above 0"),
])
def test_below_the_found_energy_the_sentence_reads_the_gain(tokens16, gains, words):
    rows = [_cell(12, 1.0, 1.0), *({**_cell(leads, 0.25, 0.0),
                                    "mae_gain": {"mean": m, "lo": lo, "hi": hi, "n": 6}}
                                   for leads, (m, lo, hi) in zip((12, 3), gains, strict=True))]
    table = tokens16 / "benchmarks" / "results" / "token_detection.json"
    table.parent.mkdir(parents=True)
    table.write_text(json.dumps({"rows": rows}))
    assert f"below that, {words}. Found means" in " ".join(_section(tokens16).split())


def test_the_section_names_the_token_recipe_that_trained(tokens16):
    assert "token-level recipe" not in _section(tokens16)       # no train metrics: no words
    arch = {"probe": "fused", "fusion_dim": 32, "heads": 1, "hidden": 64, "ecg_tokens": 16}
    (tokens16 / "metrics" / "train").mkdir(exist_ok=True)
    (tokens16 / "metrics" / "train" / "fused.json").write_text(json.dumps({"arch": arch}))
    eval_path = tokens16 / "metrics" / "eval" / "fused.json"
    doc = json.loads(eval_path.read_text())
    eval_path.write_text(json.dumps({**doc, "epochs": 150}))
    assert ("The fused probe trains its token-level recipe (`train.fused.tokens`): fusion "
            "width 32, 1 head, MLP hidden 64, 150 epochs. 16 ECG tokens per subject.") \
        in _section(tokens16)
    (tokens16 / "metrics" / "train" / "fused.json").write_text(
        json.dumps({"arch": {**arch, "dropout": 0.9}}))
    assert "MLP hidden 64 (dropout 0.9), 150 epochs." in _section(tokens16)
    (tokens16 / "metrics" / "train" / "fused.json").write_text(
        json.dumps({"arch": {**arch, "dropout": 0.9, "lead_mix": 1.0}}))
    assert ("MLP hidden 64 (dropout 0.9), 150 epochs, each ECG token plus 1 x the mean of the "
            "12 leads' tokens at its moment.") in _section(tokens16)
