"""A bad ``train.probes`` stops every verb that reads params before it writes anything.

train.probes decides which pipeline stages exist (dvc.yaml's ``foreach``), so whichever
stage DVC runs first must refuse a bad list: one line naming the key, exit 2.
"""

from __future__ import annotations

import pytest
import yaml
from cli_helpers import SMALL_COHORT, SMALL_EVALUATE, SMALL_TRAIN

from rightsize.cli import main

BAD = [
    ({"probes": ["ecg", "lasso"]}, "train.probes[1]: unknown probe 'lasso' (known: ecg, echo, "
                                   "concat, fused)"),
    ({"probes": []}, "train.probes: must list at least one probe"),
    ({"probes": ["ecg", "fused", "ecg"]}, "train.probes[2]: 'ecg' is listed twice"),
    ({"probes": "ecg"}, "train.probes: expected a list of probe names, got 'ecg'"),
    ({"probes": ["ecg", "fused"], "telemetry_probes": ["echo"]},
     "train.telemetry_probes[0]: 'echo' is not in train.probes (ecg, fused)"),
    ({"probes": ["fused"], "telemetry_probes": ["fused", "fused"]},
     "train.telemetry_probes[1]: 'fused' is listed twice"),
]

# One command per verb that reads a params file; each would write OUT.
VERBS = {
    "demo-run": ["demo-run", "OUT", "--params", "P"],
    "cohort": ["cohort", "--params", "P", "--out", "OUT"],
    "train": ["train", "fused", "--params", "P", "--manifest", "M", "--out", "OUT"],
    "footprint": ["footprint", "--params", "P", "--manifest", "M", "--json", "OUT"],
    "bench-encoder": ["bench-encoder", "ecg", "--params", "P", "--json", "OUT"],
    "sizing": ["sizing", "--params", "P", "--manifest", "M", "--json", "OUT"],
    "report": ["report", "--params", "P", "--metrics", "M", "--out", "OUT"],
    "telemetry": ["telemetry", "M", "--params", "P", "--run", "demo", "--json", "OUT"],
}


@pytest.mark.parametrize("verb", sorted(VERBS))
@pytest.mark.parametrize(("train", "message"), BAD, ids=[m.split(":")[0] + str(i)
                                                         for i, (_, m) in enumerate(BAD)])
def test_bad_probe_lists_stop_every_verb_that_reads_params(tmp_path, capsys, verb, train,
                                                           message):
    params = tmp_path / "params.yaml"
    params.write_text(yaml.safe_dump({"demo": {"seed": 0}, "cohort": SMALL_COHORT,
                                      "train": {**SMALL_TRAIN, **train},
                                      "evaluate": SMALL_EVALUATE}))
    out = tmp_path / "out"
    argv = [{"P": str(params), "M": str(tmp_path / "m"), "OUT": str(out)}.get(a, a)
            for a in VERBS[verb]]
    assert main(argv) == 2
    err = capsys.readouterr().err.splitlines()
    assert err == [f"rightsize: error: {message}"] or (
        len(err) == 1 and err[0].startswith(f"rightsize: error: {message}")), err
    assert not out.exists() and sorted(p.name for p in tmp_path.iterdir()) == ["params.yaml"]
