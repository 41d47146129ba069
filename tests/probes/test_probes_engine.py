"""The engine's boundaries: probe names only in the registry, private torch APIs only in
the accelerators (each with a public fallback that trains to the same model), and the
``train.accelerate`` switch."""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path

import numpy as np
import pytest
import torch

from rightsize.probes import accel, registry
from rightsize.probes.accel import adamw, gemm, handgrad
from rightsize.probes.engine.train import train_probe, train_seeds
from rightsize.probes.models.fused import FusedConfig
from rightsize.probes.registry import spec as probe_spec

from .probe_fixtures import GRADIENT_TRAINED, make_cohort, small_train_config

POOLED = registry.spec("fused").accelerators[:1]        # fused_pooled, as declared
SRC = Path(__file__).resolve().parents[2] / "src" / "rightsize"
ENGINE = [*sorted((SRC / "probes").rglob("*.py")), SRC / "verbs" / "probes.py"]
NAME = r"""["'](?:ecg|echo|concat|fused)["']"""
BRANCH = re.compile(rf"""(?:==|!=|\bin\b)\s*[(\[{{]?\s*{NAME}|{NAME}\s*(?:==|!=)"""
                    r"""|\bcfg\.(?:ecg|echo|concat|fused)\b""")
PRIVATE = re.compile(r"""torch\.ops\b|torch\._[A-Za-z]|\baten\.|getattr\(torch, ["']_""")


def _hits(pattern: re.Pattern[str], files: list[Path]) -> list[str]:
    return [f"{f.relative_to(SRC)}:{i}: {line.strip()}" for f in files
            for i, line in enumerate(f.read_text().splitlines(), 1) if pattern.search(line)]


def test_probe_names_are_branched_on_only_in_the_registry():
    # what the pattern catches (lines of the engine before the registry existed)
    for old in ('if name == "ecg" or len(seeds) == 1:', 'p = cfg.fused.modality_dropout',
                '"ef_score": "logit" if probe.name == "ecg" else "neg_lvef",',
                'if self.name != "fused" or len(data) == 0:'):
        assert BRANCH.search(old), old
    assert not BRANCH.search('return {"echo": c, "ecg": g}')       # batch keys are fine
    assert _hits(BRANCH, ENGINE) == []      # the registry is rightsize/probes/registry.py


def test_private_torch_apis_live_only_in_the_accelerators():
    for old in ("torch._fused_adamw_(", "torch.ops.aten.gelu_backward",
                'getattr(torch, "_fused_adamw_", None)'):
        assert PRIVATE.search(old), old
    assert not PRIVATE.search("torch.__version__")
    outside = [f for f in SRC.rglob("*.py") if (SRC / "probes" / "accel") not in f.parents]
    assert _hits(PRIVATE, outside) == []
    inside = _hits(PRIVATE, sorted((SRC / "probes" / "accel").glob("*.py")))
    assert {h.split(":")[0] for h in inside} == {
        "probes/accel/gemm.py", "probes/accel/adamw.py", "probes/accel/handgrad.py"}
    # each is looked up once, into a table a test can empty (the public fallback then runs)
    for module in (gemm, adamw, handgrad):
        assert module._PRIVATE and all(op is not None for op in module._PRIVATE.values())


def _fp32_fused_fit(cohort, **over):
    cfg = small_train_config(epochs=3, fusion_dim=256, hidden=32, dropout=0.1)
    cfg = dataclasses.replace(cfg, batch_size=64, pca_rank=16, lr=1e-3, **over)
    return train_probe(probe_spec("fused"), cohort, cfg)


@pytest.fixture(scope="module")
def wide_cohort():
    """Dims large enough that the fused step's products take the oneDNN route."""
    return make_cohort(n=600, clips=4, echo_dim=256, ecg_dim=192, splits=(400, 100, 100))


HIDDEN = [(gemm, "linear_pointwise"), (adamw, "fused_adamw"), (handgrad, "gelu_backward"),
          (handgrad, "native_layer_norm_backward")]


@pytest.mark.parametrize("module, op", HIDDEN, ids=[op for _, op in HIDDEN])
def test_training_with_a_private_op_hidden_takes_its_public_fallback(
        wide_cohort, monkeypatch, module, op):
    """The fallback computes the same model: another kernel (other last bits), the same
    curves to float32 rounding amplified by a few epochs of training."""
    if op == "linear_pointwise" and not gemm.onednn_available():
        pytest.skip("this torch build has no oneDNN fp32 linear")
    monkeypatch.setitem(gemm._FORCED, "onednn", True)     # whatever this machine's route
    base = _fp32_fused_fit(wide_cohort)
    assert base.extra["accelerator"] == "fused_pooled"
    monkeypatch.setitem(module._PRIVATE, op, None)
    hidden = _fp32_fused_fit(wide_cohort)
    assert hidden.val_loss != base.val_loss                   # the fallback really ran
    np.testing.assert_allclose(hidden.val_loss, base.val_loss, rtol=1e-4)
    np.testing.assert_allclose(hidden.train_loss, base.train_loss, rtol=1e-4)


def test_public_adamw_is_torch_single_tensor_adamw_bit_for_bit():
    torch.manual_seed(0)
    ours = [torch.nn.Parameter(torch.randn(50)), torch.nn.Parameter(torch.randn(3, 4))]
    theirs = [torch.nn.Parameter(p.detach().clone()) for p in ours]
    opt = adamw.AdamW(ours, lr=3e-3, weight_decay=0.1, fused=False)
    ref = torch.optim.AdamW(theirs, lr=3e-3, weight_decay=0.1, foreach=False, fused=False)
    for step in range(6):
        grads = [torch.randn_like(p) for p in ours]
        for p, q, g in zip(ours, theirs, grads, strict=True):
            p.grad, q.grad = g.clone(), g.clone()
        if step % 2:
            opt.update(ours[0], ours[0].grad)              # handed over alone, then the rest
            ours[0].grad = None
        opt.step()
        ref.step()
    for p, q in zip(ours, theirs, strict=True):
        assert torch.equal(p, q)


def test_fused_adamw_matches_torch_adamw_bit_for_bit():
    torch.manual_seed(0)
    ours = [torch.nn.Parameter(torch.randn(50)), torch.nn.Parameter(torch.randn(3, 4))]
    theirs = [torch.nn.Parameter(p.detach().clone()) for p in ours]
    unused = torch.nn.Parameter(torch.ones(3))            # no gradient: skipped by both
    opt = adamw.AdamW([*ours, unused], lr=3e-3, weight_decay=0.1)
    assert opt.fused
    ref = torch.optim.AdamW(theirs, lr=3e-3, weight_decay=0.1, fused=True)
    for _ in range(5):
        for p, q in zip(ours, theirs, strict=True):
            p.grad = torch.randn_like(p)
            q.grad = p.grad.clone()
        opt.step()
        ref.step()
    for p, q in zip(ours, theirs, strict=True):
        assert torch.equal(p, q)
    assert torch.equal(unused, torch.ones(3))


def test_public_gelu_and_layer_norm_backward_equal_atens(monkeypatch):
    g = torch.Generator().manual_seed(0)
    x, d = torch.randn(6, 5, 16, generator=g), torch.randn(6, 5, 16, generator=g)
    w, b = torch.randn(16, generator=g), torch.randn(16, generator=g)
    _, mean, rstd = torch.native_layer_norm(x, (16,), w, b, 1e-5)
    private = (handgrad.gelu_backward(d, x),
               handgrad.layer_norm_backward(d, x, (16,), mean, rstd, w, b, [True] * 3))
    with accel.use(False):                                 # accelerators off: public ops
        public = (handgrad.gelu_backward(d, x),
                  handgrad.layer_norm_backward(d, x, (16,), mean, rstd, w, b, [True] * 3))
    torch.testing.assert_close(public[0], private[0], rtol=1e-5, atol=1e-6)
    for a, e in zip(public[1], private[1], strict=True):
        torch.testing.assert_close(a, e, rtol=1e-5, atol=1e-5)


def test_accelerate_false_trains_every_probe_with_the_textbook_trainer(cohort):
    cfg = dataclasses.replace(small_train_config(epochs=3), accelerate=False)
    cfg = dataclasses.replace(cfg, echo=dataclasses.replace(cfg.echo, epochs=3),
                              concat=dataclasses.replace(cfg.concat, epochs=3))
    for name in GRADIENT_TRAINED:
        on = train_seeds(probe_spec(name), cohort,
                         dataclasses.replace(cfg, accelerate=True, seeds=2))
        off = train_seeds(probe_spec(name), cohort, dataclasses.replace(cfg, seeds=2))
        assert on[0].extra["accelerator"] != "none" and off[0].extra["accelerator"] == "none"
        assert type(off[0].probe.model).__name__ == "TorchModel"
        assert off[0].probe.model.forward is None               # the textbook forward
        for a, b in zip(on, off, strict=True):               # the same kind of model
            assert abs(a.val_mae - b.val_mae) < 0.3 * a.val_mae, name


def test_an_accelerator_applies_only_where_every_unknown_key_has_its_default():
    defaults = {f.name: f.default for f in dataclasses.fields(FusedConfig)}
    settings = {**defaults, "probe": "fused", "ecg_tokens": 1}
    assert accel.select(POOLED, settings, defaults).name == "fused_pooled"
    assert accel.select(POOLED, {**settings, "ecg_tokens": 16}, defaults) is None
    assert accel.select(POOLED, {**settings, "new_option": 2}, defaults) is None
    assert accel.select(POOLED, {**settings, "new_option": 2},
                        {**defaults, "new_option": 2}).name == "fused_pooled"
    assert accel.select(POOLED, settings, defaults, on=False) is None
    with accel.use(False):
        assert accel.select(POOLED, settings, defaults) is None
    assert accel.skipped(POOLED, settings, defaults) == ""
    assert accel.skipped(POOLED, settings, defaults, on=False) == \
        "fused_pooled switched off (train.accelerate: false)"
    assert accel.skipped(POOLED, {**settings, "ecg_tokens": 16}, defaults) == \
        "fused_pooled: needs " + registry.accelerator("fused_pooled").precondition
    assert accel.skipped((), settings, defaults) == ""


def test_a_second_fusion_block_is_trained_by_autograd_and_saved(cohort, tmp_path, capsys):
    """train.fused.layers: 2 stacks a second block; the accelerator, written for one,
    leaves it to the textbook trainer, saying so in one line and in the fit's record, and
    the checkpoint rebuilds both blocks."""
    from rightsize.probes.engine.checkpoint import load_checkpoint, save_checkpoint
    from rightsize.probes.engine.data import split_data

    one = _small_fused(cohort, layers=1)
    assert "accelerator" not in capsys.readouterr().err
    two = _small_fused(cohort, layers=2)
    said = [line for line in capsys.readouterr().err.splitlines() if "accelerator" in line]
    assert len(said) == 1 and "fused_pooled: layers=2 not handled (it covers layers == 1" \
        in said[0] and "fused_tokens: layers=2" in said[0], said
    assert one.extra["accelerator"] == "fused_pooled" and two.extra["accelerator"] == "none"
    assert "accelerator_skipped" not in one.extra
    assert two.extra["accelerator_skipped"] in said[0]
    assert two.arch["layers"] == 2
    module = two.probe.model.module
    assert len(module.blocks) == 2 and any(n.startswith("blocks.1.") for n, _ in
                                           module.named_parameters())
    per_block = sum(p.numel() for p in module.blocks[1].parameters())
    assert two.probe.n_params == one.probe.n_params + per_block
    assert two.best_epoch >= 1 and two.val_loss[two.best_epoch - 1] < two.val_loss[0]
    save_checkpoint(tmp_path, two.probe, two.arch, {})
    probe, _ = load_checkpoint(tmp_path, "fused")
    val = split_data(cohort, "val")
    np.testing.assert_array_equal(probe.predict(val)[0], two.probe.predict(val)[0])


def _small_fused(cohort, layers):
    cfg = small_train_config(epochs=6, layers=layers)
    return train_probe(probe_spec("fused"), cohort, cfg)


def test_training_flushes_subnormals_and_restores_them():
    """A float32 subnormal (1e-39) is zero inside the training runtime, where a sharp softmax
    would otherwise slow every product it enters, and itself again outside."""
    import torch

    from rightsize.probes.engine.torch_replicas import torch_runtime

    tiny = torch.tensor([1e-39], dtype=torch.float32)
    assert (tiny * 1.0).item() != 0.0
    with torch_runtime(seed=0, threads=1, device="cpu"):
        inside = (tiny * 1.0).item()
    assert inside == 0.0
    assert (tiny * 1.0).item() != 0.0
