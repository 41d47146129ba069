"""Two probes compared seed by seed (:mod:`rightsize.probes.evaluation.paired`) and the
``rightsize compare-probes`` verb: scipy's paired t-test is the oracle of the interval."""

from __future__ import annotations

import json

import numpy as np
import pytest
from scipy import stats

from rightsize.cli import main
from rightsize.probes.evaluation.paired import compare_probes, paired_difference

CONCAT = [6.9, 7.4, 6.1, 7.8, 7.0]
FUSED = [5.6, 6.2, 6.4, 6.0, 5.9]


def _eval(maes: list[float], seed0: int = 0, rows: int = 248) -> dict:
    return {"test": {"n": rows, "mae": maes[0]},
            "seeds": {f"r{k}": {"seed": seed0 + k, "test_mae": m, "val_mae": 1.0}
                      for k, m in enumerate(maes)}}


def test_the_interval_is_scipys_paired_t_interval():
    d = paired_difference(CONCAT, FUSED)
    ci = stats.ttest_rel(CONCAT, FUSED).confidence_interval(0.95)
    assert (d.lo, d.hi) == (pytest.approx(ci.low), pytest.approx(ci.high))
    assert d.mean == pytest.approx(np.mean(np.subtract(CONCAT, FUSED))) and d.n == 5
    assert d.sd == pytest.approx(np.std(np.subtract(CONCAT, FUSED), ddof=1))
    one = paired_difference([7.0], [6.0])            # one pair: no spread, no width
    assert (one.mean, one.lo, one.hi, one.sd) == (1.0, 1.0, 1.0, 0.0)
    with pytest.raises(ValueError, match="pairs"):
        paired_difference([1.0, 2.0], [1.0])


def test_compare_pairs_by_seed_and_refuses_other_seeds_or_rows():
    # the replicas listed in another order pair by seed, not by position
    fused = _eval(FUSED)
    fused["seeds"] = dict(reversed(list(fused["seeds"].items())))
    node = compare_probes(fused, _eval(CONCAT), "fused.json", "concat.json")
    assert node["mae_gain_mean"] == pytest.approx(np.mean(np.subtract(CONCAT, FUSED)))
    assert node["per_seed"]["r2"] == {"seed": 2, "mae": 6.4, "against_mae": 6.1,
                                      "mae_gain": pytest.approx(-0.3)}
    assert node["seeds"] == [0, 1, 2, 3, 4] and node["n_pairs"] == 5 and node["ci"] == 0.95
    with pytest.raises(Exception, match="fused.json has seeds .* concat.json"):
        compare_probes(_eval(FUSED, seed0=1), _eval(CONCAT), "fused.json", "concat.json")
    with pytest.raises(Exception, match="248 test rows, concat.json on 200"):
        compare_probes(_eval(FUSED), _eval(CONCAT, rows=200), "fused.json", "concat.json")


def test_verb_writes_the_gain_and_its_headline(tmp_path, capsys):
    (tmp_path / "eval").mkdir()
    (tmp_path / "eval" / "fused.json").write_text(json.dumps(_eval(FUSED)))
    (tmp_path / "eval" / "concat.json").write_text(json.dumps(_eval(CONCAT)))
    args = ["compare-probes", "fused", "concat", "--eval-dir", str(tmp_path / "eval"),
            "--json", str(tmp_path / "out.json"), "--headline", str(tmp_path / "h.json"), "-q"]
    assert main(args) == 0
    out = json.loads((tmp_path / "out.json").read_text())
    head = json.loads((tmp_path / "h.json").read_text())["fused_vs_concat"]
    assert head == {k: out[k] for k in ("mae_gain_mean", "mae_gain_lo", "mae_gain_hi")}
    assert out["mae_gain_lo"] > 0                     # fused errs less on every seed but one
    (tmp_path / "eval" / "concat.json").write_text(json.dumps(_eval(CONCAT, seed0=3)))
    assert main(args) == 4
    assert "train both with the same train.seed" in capsys.readouterr().err
    (tmp_path / "eval" / "concat.json").unlink()     # concat not in train.probes
    assert main(args) == 0
    assert "concat.json missing" in json.loads((tmp_path / "out.json").read_text())["note"]
    assert json.loads((tmp_path / "h.json").read_text()) == {"fused_vs_concat": {}}
