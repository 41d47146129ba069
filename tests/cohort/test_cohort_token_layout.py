"""HuBERT-ECG's token layout and the planted event laid out on it (split / copy energy)."""

from __future__ import annotations

import hashlib

import numpy as np
import pytest

from rightsize.cohort import token_layout as lay
from rightsize.cohort.config import CohortConfig
from rightsize.cohort.planted_tokens import planted_mask
from rightsize.cohort.synthetic import SyntheticCohort
from rightsize.params import parse

# sha256 of the small cohort's arrays as the code before the HuBERT layout wrote them
# (commit 48ea758, generated in a git worktree of it): a pooled cohort must not move.
POOLED_DIGEST = "1c5f7bb9fe8c4ac8b61eea6462269c6170155ff312913cca89c477557bfd28c1"
TOKENS16_DIGEST = "05eb9508e83c8cd6c0697359e46ea0a990e7a9a53e6af68467605f5d203c9101"


def _conv_stack():
    """HuBERT-ECG's feature extractor shape as a torch Conv1d stack: the field's library."""
    torch = pytest.importorskip("torch")
    layers = []
    for k, s in zip((10, 3, 3, 2, 2), (4, 2, 2, 2, 2), strict=True):
        conv = torch.nn.Conv1d(1, 1, kernel_size=k, stride=s, bias=False)
        torch.nn.init.ones_(conv.weight)
        layers.append(conv)
    return torch, torch.nn.Sequential(*layers)


def _seen_by_the_conv_stack():
    """``(seen, first, last, n_out)``: which samples each token sees (samples, tokens), from
    one impulse per sample through the Conv1d stack, and each token's first and last one."""
    torch, stack = _conv_stack()
    with torch.no_grad():
        n_out = stack(torch.zeros(1, 1, lay.CROP_SAMPLES)).shape[-1]
        impulses = torch.eye(lay.CROP_SAMPLES).unsqueeze(1)             # one per sample
        seen = (stack(impulses)[:, 0, :] > 0).numpy()                   # (samples, tokens)
    first = seen.argmax(axis=0)
    last = lay.CROP_SAMPLES - 1 - seen[::-1].argmax(axis=0)
    return seen, first, last, n_out


def test_layout_matches_a_torch_conv_stack() -> None:
    """Every token's sample range and leads, from impulses through real Conv1d layers."""
    seen, first, last, n_out = _seen_by_the_conv_stack()
    assert n_out == lay.TOKENS_PER_CROP == 93
    lo, hi = lay.token_span(np.arange(93))
    assert np.array_equal(first, lo) and np.array_equal(last, hi)
    assert (lay.HOP, lay.FIELD) == (int(np.diff(first)[0]), int(last[0] - first[0] + 1))
    lead_lo, lead_hi = lay.token_leads(np.arange(93))
    assert np.array_equal(lead_lo, first // 500) and np.array_equal(lead_hi, last // 500)
    straddle = np.flatnonzero(first // 500 != last // 500)
    assert straddle.tolist() == [7, 15, 23, 30, 31, 38, 39, 46, 54, 62, 70, 77, 78, 85]
    # token_of: the token whose 64-sample step holds the sample, seen by that token
    samples = np.arange(lay.CROP_SAMPLES)
    tok = lay.token_of(0, samples // 500, samples % 500)
    covered = samples <= hi[-1]                   # the last 30 samples reach no token
    assert seen[samples[covered], tok[covered]].all() and not seen[~covered].any()
    assert np.array_equal(tok[: 92 * 64], samples[: 92 * 64] // 64)
    assert lay.tokens_per_crop(2 * lay.CROP_SAMPLES) == 2 * 93 + 1     # not how 186 is made
    assert lay.crops(186) == 2 and lay.crops(93) == 1 and lay.crops(16) == 0


def _cohort(**kw) -> SyntheticCohort:
    cfg = parse(CohortConfig, {"n_subjects": 300, "splits": {"train": 200, "val": 50,
                                                            "test": 50}, **kw}, "cohort")
    return SyntheticCohort(cfg)


@pytest.mark.parametrize(("n_tokens", "events"), [(93, 6), (186, 12)])
@pytest.mark.parametrize("leads", [1, 3, 12])
def test_event_is_one_token_per_lead(n_tokens: int, events: int, leads: int) -> None:
    """At 93 k tokens an event is a time window, one token in each of its leads, in the
    lead that token sees, at the window's time; split energy: amplitude 1/sqrt(leads)."""
    tok = _cohort(ecg_tokens=n_tokens, ecg_event_leads=leads).latents.tokens
    assert tok.n_events == events
    event = tok.events()
    assert np.array_equal(np.bincount(event[event >= 0], minlength=events),
                          np.full(events, leads))
    assert (event == -1).sum() == n_tokens - events * leads
    window_s = 5.0 * (n_tokens // 93) / events
    for e in range(events):
        mine = np.flatnonzero(event == e)
        lo, hi = lay.token_span(mine)
        assert set(np.arange(leads)) <= set((lo // 500).tolist()) | set((hi // 500).tolist())
        centre = (e + 0.5) * window_s                                  # seconds
        crop, t = divmod(centre, 5.0)
        assert (mine // 93 == crop).all()
        for lead in range(leads):                 # lead l's window centre is in its token
            flat = lead * 500 + int(t * 100)
            assert ((lo <= flat) & (flat <= hi)).sum() == 1
    np.testing.assert_allclose(tok.scale[event >= 0], 1 / np.sqrt(leads), rtol=1e-6)
    assert (tok.scale[event < 0] == 0).all() and not tok.ecg_code[event < 0].any()
    mask = tok.mask()
    assert np.array_equal(mask.sum(axis=1), np.full(len(mask), leads))
    assert np.array_equal(planted_mask(tok.planted, n_tokens, events, leads), mask)
    assert (tok.first_tokens()[tok.planted_event] == tok.planted).all()


def test_split_keeps_the_event_energy_copy_grows_it() -> None:
    """Summed over an event's tokens: split keeps the code's and the content's energy of one
    full-amplitude token whatever the leads; copy multiplies it by the leads; the gain
    scales amplitude."""
    def energy(**kw) -> tuple[float, float]:
        tok = _cohort(ecg_tokens=93, **kw).latents.tokens
        on = tok.events() == 0
        code = float((tok.ecg_code[on].astype(np.float64) ** 2).sum())
        content = float((tok.token_content(slice(0, 50))[:, on].astype(np.float64) ** 2)
                        .sum(axis=1).mean())
        return code, content

    one, _ = energy(ecg_event_leads=1)
    base = _cohort(ecg_tokens=93).latents.tokens
    full = float((base.ecg_event[0].astype(np.float64) ** 2).sum())
    np.testing.assert_allclose(one, full, rtol=1e-5)
    for leads in (3, 12):
        np.testing.assert_allclose(energy(ecg_event_leads=leads)[0], full, rtol=1e-5)
        np.testing.assert_allclose(energy(ecg_event_leads=leads, ecg_event_energy="copy")[0],
                                   leads * full, rtol=1e-5)
    np.testing.assert_allclose(energy(ecg_event_gain=2.0)[0], 4 * full, rtol=1e-5)
    c12, w12 = energy()
    _, w1 = energy(ecg_event_leads=1)
    np.testing.assert_allclose(w12, w1, rtol=1e-5)               # the same w, split 12 ways


def test_truth_file_gives_the_event_across_its_leads(tmp_path, small_config) -> None:
    """The truth file's planted token and metadata rebuild the event's tokens in each lead."""
    from rightsize.cohort.build import build_manifest
    from rightsize.cohort.truth import load_truth

    cfg = small_config(ecg_tokens=93, ecg_event_leads=3)
    out, truth = tmp_path / "m.parquet", tmp_path / "truth.parquet"
    build_manifest(cfg, out, truth=truth)
    t, cohort = load_truth(truth), SyntheticCohort(cfg)
    assert (t.ecg_tokens, t.ecg_events, t.ecg_event_leads) == (93, 6, 3)
    mask, tok = t.planted_mask(), cohort.latents.tokens
    has = t.planted_ecg_token >= 0
    assert np.array_equal(mask[has], tok.mask()[has]) and not mask[~has].any()
    assert (mask[has].sum(axis=1) == 3).all()


def _digest(cohort: SyntheticCohort) -> str:
    arrays = {}
    for k, ch in enumerate(cohort.chunks()):
        for f in ("echo", "ecg", "lvef", "ef_le_40", "split", "n_clips", "has_echo",
                  "has_ecg"):
            arrays[f"{k}.{f}"] = np.asarray(getattr(ch, f))
    arrays["matched"], arrays["planted"] = cohort.truth()
    h = hashlib.sha256()
    for key in sorted(arrays):
        h.update(key.encode())
        h.update(np.ascontiguousarray(arrays[key]).tobytes())
    return h.hexdigest()


def test_pooled_and_one_token_cohorts_keep_their_bytes() -> None:
    """The new keys leave a pooled cohort (and 16 tokens, one token an event) bit for bit
    as the code before them wrote it, whatever energy, leads and gain."""
    kw = {"ecg_event_energy": "copy", "ecg_event_leads": 3, "ecg_event_gain": 2.0}
    assert _digest(_cohort()) == POOLED_DIGEST
    assert _digest(_cohort(**kw)) == POOLED_DIGEST
    assert _digest(_cohort(ecg_tokens=16)) == TOKENS16_DIGEST


@pytest.mark.parametrize(("key", "value"), [("ecg_event_leads", 0), ("ecg_event_leads", 13),
                                            ("ecg_event_energy", "spread"),
                                            ("ecg_event_gain", 0.0)])
def test_bad_event_keys_name_the_key(key: str, value: object) -> None:
    from rightsize.errors import ParamsError

    with pytest.raises(ParamsError, match=f"cohort.{key}"):
        parse(CohortConfig, {key: value}, "cohort")


def test_same_moment_is_each_leads_token_at_the_tokens_centre() -> None:
    """same_moment: one token per lead, the token itself in its own lead, each the token
    whose 64-sample step (seen by the conv stack) holds the centre of the token's receptive
    field, moved to that lead; crop after crop at 186; none without a crop layout."""
    seen, first, last, _ = _seen_by_the_conv_stack()
    centre = (first + last) // 2 % 500                           # within the token's lead
    idx = lay.same_moment(93)
    assert idx.shape == (93, 12)
    assert (idx == np.arange(93)[:, None]).sum(axis=1).tolist() == [1] * 93
    for t in range(93):
        for lead in range(12):
            flat = lead * 500 + centre[t]
            assert seen[flat, idx[t, lead]] or flat > last[-1]   # seen, or past every token
            assert idx[t, lead] == min(flat // 64, 92)           # and its step holds it
    assert np.array_equal(lay.same_moment(186), np.concatenate([idx, idx + 93]))
    assert lay.same_moment(16) is None and lay.same_moment(94) is None
