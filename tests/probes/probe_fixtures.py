"""Shared helpers of the probe tests: planted cohorts, small configs, float64 test models.

Test modules import these from here (``from .probe_fixtures import ...``); the pytest
fixtures built on them live in conftest.py.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from rightsize.cohort.arrays import CohortArrays
from rightsize.probe_names import PROBES
from rightsize.probes.engine.config import TrainConfig
from rightsize.probes.models.concat import ConcatConfig
from rightsize.probes.models.echo import EchoConfig
from rightsize.probes.models.fused import FusedConfig
from rightsize.probes.registry import spec

GRADIENT_TRAINED = tuple(p for p in PROBES if spec(p).closed_form is None)   # seeded

# params blocks of the CLI tests' params.yaml
TRAIN = {
    "probes": list(PROBES), "seed": 0, "threads": 1, "device": "cpu",
    "batch_size": 32, "lr": 0.003, "weight_decay": 0.0001, "pca_rank": 16,
    "ecg": {"alphas": [10.0, 1000.0], "Cs": [0.01, 1.0]},
    "echo": {"epochs": 3}, "concat": {"epochs": 3, "hidden": 16},
    "fused": {"epochs": 3, "fusion_dim": 16, "heads": 2, "hidden": 16},
}
EVALUATE = {"seed": 0, "n_bootstrap": 300, "n_bootstrap_missing": 200, "ci": 0.95}


def make_cohort(n: int = 600, clips: int = 4, echo_dim: int = 64, ecg_dim: int = 48,
                seed: int = 0, noise_sd: float = 2.0, emb_noise: float = 0.5,
                missing_frac: float = 0.03, splits: tuple[int, int, int] = (400, 80, 120),
                ) -> CohortArrays:
    """A planted cohort: lvef = 50 + 6 u + 6 v + 7 s[matched] + noise (percent)."""
    assert sum(splits) == n
    rng = np.random.default_rng(seed)
    k = max(clips, 2)                                     # view keys
    u, v, eps = rng.standard_normal((3, n))
    s = rng.standard_normal((n, clips))
    has_echo = rng.random(n) >= missing_frac
    has_ecg = rng.random(n) >= missing_frac
    n_clips = rng.integers(max(1, clips - 1), clips + 1, n) * has_echo
    query = rng.integers(0, k, n)
    keys = (query[:, None] + 1 + rng.integers(0, k - 1, (n, clips))) % k
    matched = np.floor(rng.random(n) * np.maximum(n_clips, 1)).astype(int)
    keys[np.arange(n), matched] = query
    lvef = 50.0 + 6 * u + 6 * v + 7 * s[np.arange(n), matched] + noise_sd * eps

    lat_e = np.concatenate([u[:, None, None].repeat(clips, 1), s[..., None],
                            2.0 * np.eye(k)[keys], rng.standard_normal((n, clips, 1))], axis=2)
    lat_g = np.concatenate([v[:, None], rng.standard_normal((n, 1)), 2.0 * np.eye(k)[query]],
                           axis=1)
    w_e = rng.standard_normal((lat_e.shape[-1], echo_dim)) / np.sqrt(lat_e.shape[-1])
    w_g = rng.standard_normal((lat_g.shape[-1], ecg_dim)) / np.sqrt(lat_g.shape[-1])
    echo = lat_e @ w_e + 0.3 + emb_noise * rng.standard_normal((n, clips, echo_dim))
    ecg = lat_g @ w_g - 0.2 + emb_noise * rng.standard_normal((n, ecg_dim))
    present = np.arange(clips)[None, :] < n_clips[:, None]
    echo = (echo * present[..., None]).astype(np.float32)
    ecg = (ecg * has_ecg[:, None]).astype(np.float32)

    split = np.repeat(np.arange(3, dtype=np.int8), splits)
    rng.shuffle(split)
    return CohortArrays(
        subject_id=np.arange(n, dtype=np.int64), split=split,
        lvef=lvef.astype(np.float32), ef_le_40=lvef.astype(np.float32) <= 40.0,
        echo=echo, n_clips=n_clips.astype(np.int16), ecg=ecg,
        has_echo=has_echo, has_ecg=has_ecg,
        metadata={"source": "tests", "seed": seed, "perfect_model_mae": noise_sd * 0.7979},
    )


def small_manifest(root: Path) -> Path:
    """A 240-subject synthetic manifest (3 clips, 32-d echo, 24-d ECG) at ``root``."""
    from rightsize.cohort.build import build_manifest
    from rightsize.cohort.config import CohortConfig, SplitsConfig

    cfg = CohortConfig(n_subjects=240, splits=SplitsConfig(160, 30, 50), echo_dim=32,
                       ecg_dim=24, max_clips=3, row_group_size=64)
    build_manifest(cfg, root / "manifest.parquet")
    return root / "manifest.parquet"


def small_train_config(seed: int = 0, **fused: object) -> TrainConfig:
    """Train settings sized for the tiny cohort (seconds per probe on one thread)."""
    fcfg = {"epochs": 30, "fusion_dim": 32, "heads": 2, "hidden": 32, "dropout": 0.0,
            "modality_dropout": 0.1, **fused}
    return TrainConfig(seed=seed, threads=1, device="cpu", batch_size=32, lr=3e-3,
                       weight_decay=1e-4, echo=EchoConfig(epochs=30),
                       concat=ConcatConfig(epochs=30, hidden=32, dropout=0.0),
                       fused=FusedConfig(**fcfg))


# Textbook-vs-accelerator tests: float64 inputs and models with random moments, orthonormal
# PCA bases and parameters moved off their symmetric initial values.
DE, DG = 40, 30


def probe_inputs(clips: int, rows: int = 7, seed: int = 0, tokens: int = 0):
    """``rows`` rows (a multiple of 7): no clips, some clips, all clips; ECG absent in some.

    ``tokens`` > 0 gives a token-level ECG (rows, tokens, DG); 0 a pooled one (rows, DG).
    """
    import torch

    g = torch.Generator().manual_seed(seed)
    n = torch.tensor([0, 1, 2, 3, 5, 4, 5]).clamp(max=clips).repeat(rows // 7)
    mask = torch.arange(clips)[None, :] < n[:, None]
    echo = torch.randn(rows, clips, DE, generator=g, dtype=torch.float64)
    shape = (rows, tokens, DG) if tokens else (rows, DG)
    ecg = torch.randn(*shape, generator=g, dtype=torch.float64)
    has_ecg = torch.tensor([True, True, False, True, True, False, True]).repeat(rows // 7)
    return echo, mask, ecg, has_ecg


def randomized(make, rank: int, seed: int = 0):
    """``make(rank)`` in float64 with random moments and bases, parameters moved."""
    import torch

    torch.manual_seed(seed)
    model = make(rank).double()
    for norm in (model.norm_echo, getattr(model, "norm_ecg", None)):
        if norm is None:
            continue
        norm.mean.normal_()
        norm.inv_sd.uniform_(0.5, 2.0)
        if norm.rank:
            q, _ = torch.linalg.qr(torch.randn(norm.mean.shape[0], norm.rank,
                                               dtype=torch.float64))
            norm.basis.copy_(q)
    with torch.no_grad():                      # move off the zero/symmetric initial values
        for p in model.parameters():
            p.add_(0.3 * torch.randn_like(p))
    return model


def makers(dropout: float = 0.0) -> dict:
    """Builders ``rank -> module`` of the three torch probes at the test dims."""
    from rightsize.probes.models.concat.model import ConcatMLPProbe
    from rightsize.probes.models.echo.model import EchoAttnProbe
    from rightsize.probes.models.fused.model import CrossAttnFusedProbe

    return {
        "echo": lambda r: EchoAttnProbe(DE, DG, pca_rank=r),
        "concat": lambda r: ConcatMLPProbe(DE, DG, hidden=16, dropout=dropout, pca_rank=r),
        "fused": lambda r: CrossAttnFusedProbe(DE, DG, fusion_dim=16, heads=4, hidden=16,
                                               dropout=dropout, pca_rank=r),
    }


def with_ecg_tokens(arrays: CohortArrays, tokens: int, seed: int = 1,
                    spread: float = 0.5) -> CohortArrays:
    """``arrays`` with ``tokens`` ECG tokens per subject (n, N, ecg_dim): the pooled vector
    plus per-token noise, zero where the ECG is absent (the contract of a token manifest)."""
    import dataclasses

    rng = np.random.default_rng(seed)
    n, dim = arrays.ecg.shape
    ecg = arrays.ecg[:, None, :] + spread * rng.standard_normal((n, tokens, dim))
    ecg *= arrays.has_ecg[:, None, None]
    return dataclasses.replace(arrays, ecg=ecg.astype(np.float32))
