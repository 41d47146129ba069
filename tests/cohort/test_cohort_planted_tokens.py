"""The planted token (``ecg_tokens > 1``): what only token-level attention can find.

The probes see each modality through a rank-``train.pca_rank`` (32) PCA fit on the train
split (:class:`rightsize.probes.engine.data.Moments`): for ECG tokens, over every token of every
train subject with an ECG, as over every present clip for the echo. These tests fit that
PCA the same way (standardize, top-32 eigenvectors of the Gram matrix), accumulated row
group by row group so that 186 tokens x 768 floats x 1,208 subjects never sit in memory,
and check in those coordinates what the probes will need.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pytest

from rightsize.cohort.config import CohortConfig
from rightsize.cohort.planted_tokens import R_CODE, WEIGHT_TOKEN, token_codes
from rightsize.cohort.synthetic import SyntheticCohort
from rightsize.params import parse

RANK = 32                       # train.pca_rank
ENERGY_MIN = 0.9                # share of each code's energy inside the top-32 subspace
ORACLE_GAIN = 2.0               # LVEF MAE points the planted token adds to a pooled linear fit


@pytest.mark.parametrize("n_tokens", [2, 5, 16, 17, 93, 186])
def test_codes_are_a_unit_frame(n_tokens: int) -> None:
    codes = token_codes(n_tokens, np.random.default_rng(0)).astype(np.float64)
    r = min(n_tokens - 1, R_CODE)
    assert codes.shape == (n_tokens, r)
    np.testing.assert_allclose(np.linalg.norm(codes, axis=1), 1.0, atol=1e-6)
    assert np.linalg.norm(codes.mean(axis=0)) < 0.05          # (exactly 0 for a simplex)
    cos = codes @ codes.T
    off = cos[~np.eye(n_tokens, dtype=bool)]
    if n_tokens <= R_CODE + 1:        # a regular simplex: every pair equally far apart
        np.testing.assert_allclose(off, -1.0 / (n_tokens - 1), atol=1e-6)
    else:                             # as spread as r dimensions allow: no two codes alike
        assert off.max() < 0.9, off.max()
        np.testing.assert_allclose(np.linalg.eigvalsh(codes.T @ codes) / (n_tokens / r),
                                   1.0, atol=0.35)                        # near-tight frame


def _config(**overrides: object) -> CohortConfig:
    return parse(CohortConfig, overrides, "cohort")


def test_pooled_cohort_has_no_token_model(small_config) -> None:
    cohort = SyntheticCohort(small_config())
    assert cohort.latents.tokens is None and cohort.ecg_tokens == 1
    matched, planted = cohort.truth()
    assert (planted == -1).all() and planted.dtype == np.int16
    assert np.array_equal(matched >= 0, cohort.n_clips > 0)
    assert "d" not in cohort.metadata()["generator"]


def test_tokens_add_to_the_pooled_draws(small_config) -> None:
    """N > 1 keeps every pooled latent and adds the token term to LVEF and the echo code."""
    one, many = SyntheticCohort(small_config()), SyntheticCohort(small_config(ecg_tokens=6))
    a, b = one.latents, many.latents
    for name in ("echo_score", "ecg_score", "clip_score", "query", "keys", "matched"):
        assert np.array_equal(getattr(a, name), getattr(b, name)), name
    for name in ("split", "has_echo", "has_ecg", "n_clips"):
        assert np.array_equal(getattr(one, name), getattr(many, name)), name
    tok = b.tokens
    np.testing.assert_allclose(b.signal - a.signal - (many.mu - one.mu),
                               WEIGHT_TOKEN * tok.signal, atol=1e-9)
    assert many.metadata()["generator"]["d"] == WEIGHT_TOKEN
    matched, planted = many.truth()
    assert np.array_equal(planted, np.where(many.has_ecg, tok.planted, -1))
    echo_one, _ = one._embeddings(0, 120)
    echo_many, ecg = many._embeddings(0, 120)
    present = np.arange(4)[None, :] < many.n_clips[:, None]
    np.testing.assert_allclose((echo_many - echo_one)[present],
                               np.repeat(tok.echo_term(slice(0, 120)), many.n_clips, axis=0),
                               atol=1e-4)
    assert ecg.shape == (120, 6, 12) and not ecg[~many.has_ecg].any()


def test_ecg_alone_does_not_tell_the_planted_token(small_config) -> None:
    """A classifier on ECG tokens finds t* only when it is also shown LVEF."""
    from sklearn.linear_model import LogisticRegression
    from sklearn.metrics import roc_auc_score

    n, t = 3000, 8
    cfg = small_config(n_subjects=n, splits={"train": 2000, "val": 500, "test": 500},
                       ecg_dim=96, ecg_tokens=t, missing_ecg_frac=0.0, row_group_size=500)
    cohort = SyntheticCohort(cfg)
    ecg = np.concatenate([c.ecg for c in cohort.chunks()]).astype(np.float64)   # (n, t, 96)
    x = (ecg - ecg.mean(axis=0)).reshape(n * t, -1)            # tokens minus their index mean
    label = (np.arange(t)[None, :] == cohort.latents.tokens.planted[:, None]).reshape(-1)
    y = np.repeat(cohort.lvef - cohort.lvef.mean(), t)[:, None] / 10
    fit, held = np.arange(n * t) < 2000 * t, np.arange(n * t) >= 2000 * t

    def auroc(features: np.ndarray) -> float:
        model = LogisticRegression(max_iter=2000).fit(features[fit], label[fit])
        return float(roc_auc_score(label[held], model.decision_function(features[held])))

    # AUROC's standard error here is ~0.005. The positive control is weak by nature: one
    # token's content correlates ~0.5 with LVEF, so a linear score of one token reaches ~0.6.
    alone = auroc(x)
    with_lvef = auroc(np.hstack([x, x * y]))
    assert abs(alone - 0.5) < 0.03, alone
    print(f"planted-token AUROC from ECG tokens: alone {alone:.3f}, with LVEF {with_lvef:.3f}")
    assert with_lvef > 0.55, with_lvef


@dataclass
class Pca:
    """Train-split standardization and top-``RANK`` principal directions of one modality."""

    mean: np.ndarray
    sd: np.ndarray
    basis: np.ndarray        # (dim, RANK)

    def coords(self, x: np.ndarray) -> np.ndarray:
        return ((x - self.mean) / self.sd) @ self.basis

    def energy(self, directions: np.ndarray) -> np.ndarray:
        """Share of each (centred) direction's standardized energy inside the subspace."""
        z = (directions - directions.mean(axis=0)) / self.sd
        return (np.sum((z @ self.basis) ** 2, axis=1) / np.sum(z * z, axis=1))


class _Moments:
    """Streaming sums for mean, sd and the standardized Gram matrix (float64)."""

    def __init__(self, dim: int) -> None:
        self.n, self.s, self.g = 0, np.zeros(dim), np.zeros((dim, dim))

    def add(self, rows: np.ndarray) -> None:
        rows = rows.astype(np.float64)
        self.n += len(rows)
        self.s += rows.sum(axis=0)
        self.g += rows.T @ rows

    def pca(self) -> Pca:
        mean = self.s / self.n
        cov = self.g / self.n - np.outer(mean, mean)
        sd = np.sqrt(np.maximum(np.diag(cov), 1e-16))
        _, vecs = np.linalg.eigh(cov / np.outer(sd, sd))
        return Pca(mean, sd, vecs[:, -RANK:][:, ::-1])


def train_pca(cohort: SyntheticCohort) -> tuple[Pca, Pca]:
    """Echo (present train clips) and ECG (train tokens of present ECGs) PCAs, streamed."""
    cfg = cohort.cfg
    echo, ecg = _Moments(cfg.echo_dim), _Moments(cfg.ecg_dim)
    for start in range(0, cfg.n_subjects, cfg.row_group_size):
        c = cohort.chunk(start, min(start + cfg.row_group_size, cfg.n_subjects))
        train = c.split == 0
        clips = np.arange(cfg.max_clips)[None, :] < c.n_clips[:, None]
        echo.add(c.echo[train][clips[train]])
        ecg.add(c.ecg[train & c.has_ecg].reshape(-1, cfg.ecg_dim))
    return echo.pca(), ecg.pca()


@pytest.mark.parametrize("n_tokens", [16, 186])
def test_codes_survive_the_probes_pca(n_tokens: int) -> None:
    """Every code keeps >= 90% of its energy in the top-32 train subspace, on both sides.

    The probes see a code only through that subspace: the share outside is lost, so a
    share of at least 0.9 keeps at least sqrt(0.9) = 95% of each code's amplitude, where a
    random direction would keep 32/1024 (echo) or 32/768 (ECG) of its energy.
    """
    cohort = SyntheticCohort(_config(ecg_tokens=n_tokens))
    tok = cohort.latents.tokens
    echo, ecg = train_pca(cohort)
    e = echo.energy(tok.echo_code.astype(np.float64))
    g = ecg.energy(tok.ecg_event.astype(np.float64))
    print(f"N={n_tokens}: code energy in the top-{RANK} PCA: echo min {e.min():.3f} "
          f"mean {e.mean():.3f}; ECG min {g.min():.3f} mean {g.mean():.3f}")
    assert e.min() >= ENERGY_MIN and g.min() >= ENERGY_MIN, (e.min(), g.min())
    content = ecg.energy(np.vstack([tok.direction, -tok.direction]).astype(np.float64))
    assert content[0] >= ENERGY_MIN, content


@dataclass
class Coords:
    """The N = 16 default cohort in PCA coordinates (what the probes' first layers see)."""

    cohort: SyntheticCohort
    echo: np.ndarray         # (n, c, RANK), zeros for absent clips
    ecg: np.ndarray          # (n, N, RANK), zeros for absent ECGs


@pytest.fixture(scope="module")
def coords16() -> Coords:
    cohort = SyntheticCohort(_config(ecg_tokens=16))
    echo_pca, ecg_pca = train_pca(cohort)
    cfg, echo, ecg = cohort.cfg, [], []
    for start in range(0, cfg.n_subjects, cfg.row_group_size):
        c = cohort.chunk(start, min(start + cfg.row_group_size, cfg.n_subjects))
        clips = np.arange(cfg.max_clips)[None, :] < c.n_clips[:, None]
        echo.append(echo_pca.coords(c.echo.astype(np.float64)) * clips[..., None])
        ecg.append(ecg_pca.coords(c.ecg.astype(np.float64)) * c.has_ecg[:, None, None])
    return Coords(cohort, np.concatenate(echo), np.concatenate(ecg))


def _ridge_mae(x: np.ndarray, y: np.ndarray, fit: np.ndarray, held: np.ndarray) -> float:
    design = np.hstack([x, np.ones((len(x), 1))])
    gram = design[fit].T @ design[fit] + 1e-3 * np.eye(design.shape[1])
    coef = np.linalg.solve(gram, design[fit].T @ y[fit])
    return float(np.mean(np.abs(design[held] @ coef - y[held])))


def test_planted_token_carries_what_pooling_dilutes(coords16: Coords) -> None:
    """Linear read-outs in PCA coordinates: the planted token's content is clear in one
    token, diluted ~1/N in the token mean, and worth LVEF MAE that pooling cannot reach."""
    x, cohort = coords16, coords16.cohort
    tok = cohort.latents.tokens
    n, t = x.ecg.shape[:2]
    both = cohort.has_echo & cohort.has_ecg
    train, test = both & (cohort.split == 0), both & (cohort.split == 2)
    w = tok.content.astype(np.float64)
    planted = x.ecg[np.arange(n), tok.planted]                     # (n, RANK)
    mean = x.ecg.mean(axis=1)
    pooled_echo = x.echo.sum(axis=1) / np.maximum(cohort.n_clips, 1)[:, None]

    def r2(features: np.ndarray, target: np.ndarray, fit: np.ndarray, held: np.ndarray) -> float:
        design = np.hstack([features, np.ones((len(features), 1))])
        coef, *_ = np.linalg.lstsq(design[fit], target[fit], rcond=None)
        return 1.0 - float(np.var(design[held] @ coef - target[held]) / np.var(target[held]))

    one_token = r2(x.ecg.reshape(n * t, -1), w.reshape(-1), np.repeat(train, t),
                   np.repeat(test, t))
    from_mean = r2(mean, tok.signal.astype(np.float64), train, test)
    y = cohort.lvef.astype(np.float64)
    base = _ridge_mae(np.hstack([pooled_echo, mean]), y, train, test)
    oracle = _ridge_mae(np.hstack([pooled_echo, mean, planted]), y, train, test)
    print(f"N={t}: content R^2 from one token {one_token:.3f} "
          f"(SNR {one_token / (1 - one_token):.0f}); planted content R^2 from the token mean "
          f"{from_mean:.3f} (1/N = {1 / t:.3f}); "
          f"linear test MAE pooled {base:.2f} -> with the planted token {oracle:.2f}")
    assert one_token > 0.95, one_token
    assert from_mean < 2.0 / t, from_mean
    assert base - oracle > ORACLE_GAIN, (base, oracle)


def test_code_match_finds_the_planted_token(coords16: Coords) -> None:
    """Decode the code from each echo clip and from each ECG token (linear, in PCA
    coordinates, fit on train), match by inner product: the best match is t*."""
    x, cohort = coords16, coords16.cohort
    tok = cohort.latents.tokens
    codes = tok.codes.astype(np.float64)
    n, t = x.ecg.shape[:2]
    both = cohort.has_echo & cohort.has_ecg
    train, test = both & (cohort.split == 0), both & (cohort.split == 2)
    clips = np.arange(x.echo.shape[1])[None, :] < cohort.n_clips[:, None]

    def decoder(features: np.ndarray, target: np.ndarray) -> np.ndarray:
        design = np.hstack([features, np.ones((len(features), 1))])
        return np.linalg.lstsq(design, target, rcond=None)[0]

    def apply(coef: np.ndarray, features: np.ndarray) -> np.ndarray:
        return np.concatenate([features, np.ones((*features.shape[:-1], 1))], axis=-1) @ coef

    from_echo = decoder(x.echo[train][clips[train]],
                        codes[np.repeat(tok.planted[train], cohort.n_clips[train])])
    from_ecg = decoder(x.ecg[train].reshape(-1, x.ecg.shape[-1]), np.tile(codes, (train.sum(), 1)))
    query = apply(from_echo, x.echo[test])                          # (m, c, r)
    keys = apply(from_ecg, x.ecg[test])                             # (m, N, r)
    best = np.einsum("mcr,mtr->mct", query, keys).argmax(axis=2)    # (m, c)
    hit = (best == tok.planted[test][:, None])[clips[test]]
    print(f"N={t}: nearest-code match per clip {hit.mean():.3f} (chance {1 / t:.3f})")
    assert hit.mean() > 0.95, hit.mean()


@pytest.mark.parametrize(("n_tokens", "events", "spans"),
                         [(16, 16, {1}), (40, 16, {2, 3}), (64, 16, {4})])
def test_abstract_layout_runs_of_tokens(small_config, n_tokens, events, spans) -> None:
    """Away from HuBERT-ECG's 93-token crops the planted event is one of ``E`` runs of
    consecutive tokens; every token of an event has its code and content (split: times
    1/sqrt(run))."""
    tok = SyntheticCohort(small_config(ecg_tokens=n_tokens)).latents.tokens
    assert tok.n_events == events
    event = tok.events()
    assert np.array_equal(event, np.sort(event)) and set(np.bincount(event)) == spans
    assert set(tok.span.tolist()) <= spans
    assert np.array_equal(tok.first_tokens()[event[tok.planted]], tok.planted)   # t* first
    size = np.bincount(event)[event]
    np.testing.assert_allclose(tok.scale, 1 / np.sqrt(size), rtol=1e-6)
    np.testing.assert_allclose(tok.ecg_code, tok.ecg_event[event] * tok.scale[:, None],
                               rtol=1e-6)
    content = tok.token_content(slice(None))
    np.testing.assert_allclose(content, tok.content[:, event] * tok.scale, rtol=1e-6)
    mask = tok.mask()
    assert np.array_equal(mask.sum(axis=1), tok.span)
    assert np.array_equal(mask, event[None, :] == event[tok.planted][:, None])
    rows = np.arange(len(tok.planted))
    assert np.array_equal(tok.signal, tok.content[rows, tok.planted_event])   # e*'s content


def test_one_event_per_token_is_the_token_model(small_config) -> None:
    """``ecg_events: 0`` (or >= N) is the one-token event: at N = 16 the default's 16 events
    draw it number for number, and at N = 93 ``ecg_events: 0`` and ``93`` agree."""
    def arrays(**kw):
        c = SyntheticCohort(small_config(**kw))
        return c.latents.tokens, c._embeddings(0, 40)

    for a_kw, b_kw in (({"ecg_tokens": 16}, {"ecg_tokens": 16, "ecg_events": 0}),
                       ({"ecg_tokens": 93, "ecg_events": 0},
                        {"ecg_tokens": 93, "ecg_events": 93})):
        (ta, (ea, ga)), (tb, (eb, gb)) = arrays(**a_kw), arrays(**b_kw)
        for name in ("codes", "echo_code", "ecg_code", "planted", "span", "content", "scale"):
            assert np.array_equal(getattr(ta, name), getattr(tb, name)), name
        assert np.array_equal(ea, eb) and np.array_equal(ga, gb)
    tok = arrays(ecg_tokens=93, ecg_events=0)[0]
    assert tok.n_events == 93 and (tok.span == 1).all() and tok.codes.shape[1] == R_CODE


def test_events_must_be_zero_or_at_least_two() -> None:
    from rightsize.errors import ParamsError

    with pytest.raises(ParamsError, match="cohort.ecg_events"):
        _config(ecg_events=1)
