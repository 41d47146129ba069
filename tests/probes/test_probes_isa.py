"""Across instruction sets: probe metrics stay within the seed spread (not bit-identical).

torch picks its CPU kernels from the instruction set (ATen's vector width, MKL's and
oneDNN's code paths), so the same seed gives different last bits on an AVX2 and an AVX-512
machine, and training amplifies them (fused val MAE 5.913 vs 6.090 on the default cohort
here, with all three capped at AVX2). No setting of the CPU path made training
bit-identical across instruction sets at <= 15 % speed cost (the AVX2 pin cost 7 % here but
only pins kernels, not oneDNN's cache-dependent blocking; MKL_CBWR=COMPATIBLE with plain
ATen costs far more), so the guarantee is "bit-identical on one machine; across machines
within the seed spread", and this test holds the second half: the fused probe under two
ISA caps (native, and oneDNN/MKL/ATen capped at AVX2), each in a fresh process (the caps
are read when the libraries load).
"""

from __future__ import annotations

import dataclasses
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from .probe_fixtures import make_cohort, small_train_config

CAP_AVX2 = {"ONEDNN_MAX_CPU_ISA": "AVX2", "MKL_CBWR": "AVX2", "ATEN_CPU_CAPABILITY": "avx2"}

# Trains the fused probe's seed replicas on the cohort and config the test wrote (argv 1, 2);
# imports only the installed package.
SCRIPT = """
import json, sys
import numpy as np, torch
from rightsize.cohort.arrays import CohortArrays
from rightsize.params import parse
from rightsize.probes.engine.config import TrainConfig
from rightsize.probes.engine.data import split_data
from rightsize.probes.engine.train import train_seeds
from rightsize.probes.registry import spec as probe_spec
with np.load(sys.argv[1]) as z:
    cohort = CohortArrays(**{k: z[k] for k in z.files}, metadata={})
with open(sys.argv[2]) as fh:
    cfg = parse(TrainConfig, json.load(fh), "train")
fits = train_seeds(probe_spec("fused"), cohort, cfg)
test = split_data(cohort, "test")
maes = [float(np.mean(np.abs(f.probe.predict(test)[0] - test.lvef))) for f in fits]
print(json.dumps({"cap": torch.backends.cpu.get_cpu_capability(), "test_mae": maes,
                  "val_mae": [f.val_mae for f in fits], "val_loss": fits[0].val_loss}))
"""


def _inputs(root: Path) -> list[str]:
    cohort = make_cohort(n=600, clips=4, echo_dim=256, ecg_dim=192, splits=(400, 100, 100))
    arrays = {f.name: getattr(cohort, f.name) for f in dataclasses.fields(cohort)
              if f.name != "metadata"}
    np.savez(root / "cohort.npz", **arrays)
    cfg = dataclasses.replace(small_train_config(epochs=15, fusion_dim=64, hidden=64),
                              pca_rank=16, seeds=5)
    (root / "train.json").write_text(json.dumps(dataclasses.asdict(cfg)))
    return [str(root / "cohort.npz"), str(root / "train.json")]


def _run(args: list[str], extra: dict[str, str]) -> dict:
    env = {k: v for k, v in os.environ.items() if k not in CAP_AVX2}
    env.update(extra)
    out = subprocess.run([sys.executable, "-c", SCRIPT, *args], env=env,
                         capture_output=True, text=True, timeout=900, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def _native_capability() -> str:
    env = {k: v for k, v in os.environ.items() if k not in CAP_AVX2}
    code = "import torch; print(torch.backends.cpu.get_cpu_capability())"
    return subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                          text=True, timeout=300, check=True).stdout.strip()


def test_fused_metrics_under_two_isa_caps_stay_within_the_seed_spread(tmp_path):
    """A change of instruction set moves a metric about as far as a change of seed does.

    Once the last bits differ the two trajectories part like two seeds, so seed 0's values
    under the two caps are two draws from the seed distribution: their difference is held
    to 3 seed sd, and the means over 5 seeds to 2 seed sd (a systematic shift, e.g. a
    reduced-precision kernel, would exceed both). Native must really differ from capped,
    or the cap did not take effect.
    """
    native_cap = _native_capability()
    if native_cap in ("DEFAULT", "NO AVX", "AVX2"):
        pytest.skip(f"this CPU's torch kernels are {native_cap} already: an AVX2 cap changes "
                    "nothing here, so the test cannot tell")
    args = _inputs(tmp_path)
    native, capped = _run(args, {}), _run(args, CAP_AVX2)
    assert (native["cap"], capped["cap"]) == (native_cap, "AVX2")
    assert native["val_loss"] != capped["val_loss"]
    for key in ("test_mae", "val_mae"):
        a, b = np.asarray(native[key]), np.asarray(capped[key])
        sd = float(np.std(a, ddof=1))
        assert sd > 0
        assert abs(a[0] - b[0]) < 3 * sd, (key, a[0], b[0], sd)          # seed 0
        assert abs(a.mean() - b.mean()) < 2 * sd, (key, a.mean(), b.mean(), sd)
