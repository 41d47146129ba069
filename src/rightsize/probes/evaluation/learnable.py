"""What the train split allows: the planted-event match learnt from LVEF by a told learner.

The oracle of :mod:`rightsize.probes.evaluation.ceiling` knows the generator's projections,
so its weight on the planted event says whether the echo clips *identify* it; it does
not say whether a model can *learn* the echo->ECG match from the cohort's train subjects by
fitting LVEF, which is all a probe gets. This module measures that with the smallest model
that could, given every advantage short of the answer:

* **told the code subspaces**: the echo clips' and ECG tokens' probe coordinates (the
  train-split standardization and top-``pca_rank`` principal directions, as the probes see
  them; the standardized embedding where ``pca_rank`` is 0 or not below its width) are
  projected on the span of the generator's token codes in that view (``r`` dimensions,
  :mod:`rightsize.cohort.planted_tokens`), so the only thing left to learn of the match
  is one bilinear form ``A`` (echo view x ECG view);
* one attention per present clip over the subject's ``N`` tokens (no null key; uniform is
  ``1/N``), ``a_c = softmax_t(x_c^T A y_t)``, and a linear read of everything else::

      lvef_hat = b + w_x . mean_c x_c + w_y . mean_t y_t + w_v . mean_c sum_t a_ct y_t

  (``x``, ``y``: the coordinates divided by their train sd; the reads see all
  coordinates, the attention only the told subspaces);
* the fused probe's loss (MSE on the train-standardized LVEF), full-batch AdamW (lr
  ``1e-3``, no weight decay), ``A`` drawn ``N(0, 1/(d_echo d_ecg))`` from ``seed``, the other
  parameters zero, and the step kept with the lowest validation MSE (checked every
  :data:`CHECK_EVERY` steps): model selection by validation only, as the probes'.

Scored like the probe (:mod:`rightsize.probes.evaluation.planted`): the mean weight on the
planted event's tokens over the test subjects with an ECG and a clip, and their present
clips. It is a reference, not a bound: a better estimator could learn from fewer subjects. With
``told=False`` the attention sees every coordinate (the same small model, not told):
what this model class reaches on its own.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from rightsize.cohort.synthetic import SyntheticCohort
from rightsize.params import require
from rightsize.probes.engine.data import feature_moments, token_moments
from rightsize.probes.evaluation.spread import add_spread, per_seed

CHECK_EVERY = 10      # steps between validation checks


@dataclass(frozen=True)
class LearnerConfig:
    """``planted_ceiling``: the told learner's seeds (``0 .. seeds-1``) and most steps."""

    learner_seeds: int = 3
    learner_steps: int = 600

    def validate(self, key: str) -> None:
        """Check ranges (message names the dotted key)."""
        require(self.learner_seeds >= 0, f"{key}.learner_seeds",
                f"must be >= 0 (0 = skip the told learner), got {self.learner_seeds}")
        require(self.learner_steps >= CHECK_EVERY, f"{key}.learner_steps",
                f"must be >= {CHECK_EVERY}, got {self.learner_steps}")


@dataclass(frozen=True)
class ProbeView:
    """A synthetic cohort at N tokens in the probes' PCA coordinates, with its truth."""

    clips: np.ndarray      # (n, C, d_echo) float32, zero where no clip
    clip_mask: np.ndarray  # (n, C) bool
    tokens: np.ndarray     # (n, N, d_ecg) float32, zero where no ECG
    has_ecg: np.ndarray    # (n,) bool
    lvef: np.ndarray       # (n,) float64
    split: np.ndarray      # (n,) int: 0 train, 1 val, 2 test
    planted: np.ndarray    # (n, N) bool: the planted event's tokens
    echo_codes: np.ndarray  # (d_echo, r): orthonormal basis of the codes' span, echo view
    ecg_codes: np.ndarray   # (d_ecg, r): the same, ECG view


def _basis(codes: np.ndarray, r: int) -> np.ndarray:
    """(d, r) orthonormal columns spanning the centred rows of ``codes`` (N, d)."""
    u, _, _ = np.linalg.svd((codes - codes.mean(axis=0)).T, full_matrices=False)
    return u[:, :r].astype(np.float32)


def probe_view(cohort: SyntheticCohort, pca_rank: int) -> ProbeView:
    """Generate ``cohort`` (its ``ecg_tokens`` > 1) and project it as the probes do."""
    tok = cohort.latents.tokens
    if tok is None:
        raise ValueError(f"cohort.ecg_tokens = {cohort.cfg.ecg_tokens}: no planted token")
    parts = list(cohort.chunks())
    echo = np.concatenate([p.echo for p in parts])
    ecg = np.concatenate([p.ecg for p in parts])
    mask = np.arange(cohort.cfg.max_clips)[None, :] < cohort.n_clips[:, None]
    train = cohort.split == 0
    em, es, eb = feature_moments(echo[train][mask[train]], pca_rank)
    gm, gs, gb = token_moments(ecg[train], cohort.has_ecg[train], pca_rank, None)
    eb = np.eye(echo.shape[-1], dtype=np.float32) if eb is None else eb    # no PCA: the
    gb = np.eye(ecg.shape[-1], dtype=np.float32) if gb is None else gb     # standardized view
    clips = ((echo - em) / es) @ eb * mask[..., None]
    tokens = ((ecg - gm) / gs) @ gb * cohort.has_ecg[:, None, None]
    r = tok.codes.shape[1]
    return ProbeView(clips=clips.astype(np.float32), clip_mask=mask,
                     tokens=tokens.astype(np.float32), has_ecg=cohort.has_ecg.copy(),
                     lvef=cohort.lvef.astype(np.float64), split=cohort.split.copy(),
                     planted=tok.mask(),
                     echo_codes=_basis((tok.echo_code / es) @ eb, r),
                     ecg_codes=_basis((tok.ecg_event / gs) @ gb, r))


def learn_match(view: ProbeView, seed: int, steps: int, told: bool = True) -> dict[str, Any]:
    """Fit the told learner (module docstring) with ``seed`` for at most ``steps`` full-batch
    steps; its numbers at the step of lowest validation MSE."""
    import torch

    torch.manual_seed(seed)
    d_echo, d_ecg = view.clips.shape[-1], view.tokens.shape[-1]
    train = view.split == 0
    mu, sd = float(view.lvef[train].mean()), float(view.lvef[train].std())
    x_sd = _nonzero(view.clips[view.clip_mask & train[:, None]].std(axis=0))
    y_sd = _nonzero(view.tokens[view.has_ecg & train].reshape(-1, d_ecg).std(axis=0))
    pe, pg = ((view.echo_codes @ view.echo_codes.T, view.ecg_codes @ view.ecg_codes.T)
              if told else (np.eye(d_echo), np.eye(d_ecg)))
    p_e, p_g = (torch.from_numpy(p.astype(np.float32)) for p in (pe, pg))

    def part(split: int) -> tuple[torch.Tensor, ...]:
        rows = view.split == split
        x = torch.from_numpy(view.clips[rows] / x_sd)
        y = torch.from_numpy(view.tokens[rows] / y_sd)
        m = torch.from_numpy(view.clip_mask[rows]).to(x.dtype).unsqueeze(-1)
        t = torch.from_numpy((view.lvef[rows] - mu) / sd).float()
        return x, x @ p_e, m, y, y @ p_g, t

    data = {s: part(s) for s in (0, 1, 2)}
    a_mat = torch.nn.Parameter(torch.randn(d_echo, d_ecg) / math.sqrt(d_echo * d_ecg))
    read_x = torch.nn.Parameter(torch.zeros(d_echo))
    reads = torch.nn.Parameter(torch.zeros(2, d_ecg))     # the mean token, the attended one
    bias = torch.nn.Parameter(torch.zeros(()))
    opt = torch.optim.AdamW([a_mat, read_x, reads, bias], lr=1e-3, weight_decay=0.0)

    def forward(split: int) -> tuple[torch.Tensor, torch.Tensor]:
        x, xa, m, y, ya, _ = data[split]
        att = torch.einsum("bcr,rs,bns->bcn", xa, a_mat, ya).softmax(-1)
        count = m.sum(1).clamp(min=1.0)
        attended = (torch.einsum("bcn,bns->bcs", att, y) * m).sum(1) / count
        pred = (bias + ((x * m).sum(1) / count) @ read_x + y.mean(1) @ reads[0]
                + attended @ reads[1])
        return pred, att

    best: dict[str, Any] = {"val_mse": float("inf")}
    for step in range(steps + 1):
        if step % CHECK_EVERY == 0:
            with torch.no_grad():
                val = float(((forward(1)[0] - data[1][-1]) ** 2).mean())
                if val < best["val_mse"]:
                    best = {"val_mse": val, "step": step,
                            **_score(view, *forward(2), mu, sd)}
        if step == steps:
            break
        loss = ((forward(0)[0] - data[0][-1]) ** 2).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
    return {"seed": int(seed), "told": bool(told), "train_subjects": int(train.sum()), **best}


def _nonzero(sd: np.ndarray) -> np.ndarray:
    """``sd`` with zeros (a constant coordinate) replaced by 1."""
    return np.where(sd > 1e-8, sd, 1.0).astype(np.float32)


def _score(view: ProbeView, pred: Any, att: Any, mu: float, sd: float) -> dict[str, float]:
    """Test weight on the planted event's tokens (rows with an ECG and a clip, their present
    clips) and test MAE."""
    test = view.split == 2
    weights = att.numpy()                                           # (m, C, N)
    on = (weights * view.planted[test][:, None, :]).sum(axis=-1)    # (m, C)
    use = view.clip_mask[test] & (view.has_ecg[test] & view.clip_mask[test].any(1))[:, None]
    return {"planted_weight": float(on[use].mean()),
            "test_mae": float(np.abs(pred.numpy() * sd + mu - view.lvef[test]).mean())}


def null_weight(view: ProbeView) -> float:
    """The mean ``|T*| / N`` over the scored test rows (an ECG and a clip present): the weight
    attention that cannot tell the event puts on it."""
    scored = (view.split == 2) & view.has_ecg & view.clip_mask.any(axis=1)
    return float(view.planted[scored].sum(axis=1).mean()) / view.tokens.shape[1]


def told_learner(cohort: SyntheticCohort, pca_rank: int, cfg: LearnerConfig,
                 told: bool = True) -> dict[str, Any]:
    """The told learner (``told=False``: the same learner not told) over
    ``cfg.learner_seeds`` seeds: ``planted_weight_*`` and ``test_mae_*`` (mean, sd, min,
    max), ``uniform`` and ``null_weight`` (both the mean ``|T*| / N``: what attention that
    cannot tell the event puts on it), the train subjects, and each seed's numbers under
    ``seeds.r<k>``."""
    view = probe_view(cohort, pca_rank)
    runs = [learn_match(view, s, cfg.learner_steps, told) for s in range(cfg.learner_seeds)]
    rows = {k: [float(r[k]) for r in runs] for k in ("planted_weight", "test_mae", "step")}
    null = null_weight(view)
    out: dict[str, Any] = {"uniform": null, "null_weight": null,
                           "train_subjects": int((view.split == 0).sum()),
                           "steps": cfg.learner_steps, "n_seeds": len(runs), "told": told}
    add_spread(out, "planted_weight", rows["planted_weight"])
    add_spread(out, "test_mae", rows["test_mae"])
    out["seeds"] = per_seed(list(range(len(runs))), rows)
    return out
