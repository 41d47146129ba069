"""``train.fused.tokens``: the fused probe's recipe at N > 1 ECG tokens, resolved by the
estimator from the input's geometry; a pooled ECG trains the block as if it were absent."""

from __future__ import annotations

import dataclasses

import pytest

from rightsize.params import ParamsError, parse
from rightsize.probes.engine.config import TrainConfig
from rightsize.probes.engine.estimator import Estimator
from rightsize.probes.engine.train import train_probe
from rightsize.probes.measurements.token_cost import case_params, parse_case
from rightsize.probes.models.fused import FusedConfig
from rightsize.probes.registry import spec as probe_spec

from .probe_fixtures import EVALUATE, TRAIN, make_cohort, small_train_config, with_ecg_tokens

TOKEN_RECIPE = {"fusion_dim": 8, "heads": 1, "hidden": 12, "epochs": 4}


def test_the_token_recipe_applies_at_more_than_one_token_only():
    block = FusedConfig(tokens=TOKEN_RECIPE)
    pooled, tokens = block.for_ecg_tokens(1), block.for_ecg_tokens(93)
    assert pooled == dataclasses.replace(block, tokens=None)
    assert (tokens.fusion_dim, tokens.heads, tokens.hidden, tokens.epochs) == (8, 1, 12, 4)
    assert tokens.dropout == block.dropout and tokens.tokens is None
    assert FusedConfig().for_ecg_tokens(93) == FusedConfig()


def test_epochs_per_crop_scales_the_token_recipe_with_the_records_crops():
    block = FusedConfig(tokens={**TOKEN_RECIPE, "epochs_per_crop": True})
    assert [block.for_ecg_tokens(n).epochs for n in (1, 16, 93, 186, 279)] == [
        block.epochs, 4, 4, 8, 12]          # pooled: the block's own; 16: not whole crops
    at186 = block.for_ecg_tokens(186)
    assert not at186.epochs_per_crop and at186.for_ecg_tokens(186).epochs == 8   # once
    assert FusedConfig(tokens=TOKEN_RECIPE).for_ecg_tokens(186).epochs == 4


@pytest.mark.parametrize(("tokens", "message"), [
    ({"heads": 3}, "train.fused.tokens.heads: fusion_dim 256 is not divisible by heads 3"),
    ({"fusion_dim": "x"}, "train.fused.tokens.fusion_dim: expected an integer"),
    ({"nope": 1}, r"train.fused.tokens.nope: unknown key"),
    ({"tokens": {}}, "train.fused.tokens.tokens: cannot be nested"),
    ([], "train.fused.tokens: expected a mapping"),
])
def test_a_bad_token_recipe_names_its_dotted_key(tokens, message):
    with pytest.raises(ParamsError, match=message):
        parse(TrainConfig, {"fused": {"tokens": tokens}}, "train")


def test_a_pooled_ecg_trains_as_if_the_token_recipe_were_absent():
    cohort = make_cohort(n=280, splits=(180, 40, 60))
    plain = small_train_config(epochs=3)
    with_tokens = dataclasses.replace(plain, fused=dataclasses.replace(plain.fused,
                                                                       tokens=TOKEN_RECIPE))
    fused = probe_spec("fused")
    a, b = train_probe(fused, cohort, plain), train_probe(fused, cohort, with_tokens)
    assert a.arch == b.arch and "tokens" not in b.arch and b.epochs == 3
    assert a.extra["accelerator"] == b.extra["accelerator"] == "fused_pooled"
    assert a.val_mae == b.val_mae and a.val_loss == b.val_loss


def test_a_token_level_ecg_trains_the_token_recipe_with_its_accelerator():
    cohort = with_ecg_tokens(make_cohort(n=280, splits=(180, 40, 60)), 6)
    plain = small_train_config(epochs=3)
    cfg = dataclasses.replace(plain, fused=dataclasses.replace(plain.fused,
                                                               tokens=TOKEN_RECIPE))
    fit = train_probe(probe_spec("fused"), cohort, cfg)
    assert (fit.arch["fusion_dim"], fit.arch["heads"], fit.arch["hidden"]) == (8, 1, 12)
    assert fit.arch["ecg_tokens"] == 6 and "tokens" not in fit.arch
    assert fit.epochs == 4 and len(fit.val_loss) == 4
    assert fit.extra["accelerator"] == "fused_tokens"
    assert Estimator(probe_spec("fused"), cfg).config_for(6).fusion_dim == 8
    assert Estimator(probe_spec("fused"), cfg).config_for(1).fusion_dim == plain.fused.fusion_dim


def test_token_cost_times_the_token_recipe_for_its_timed_epochs():
    params = {"cohort": {"source": "synthetic", "n_subjects": 120,
                         "splits": {"train": 80, "val": 20, "test": 20}},
              "train": {**TRAIN, "fused": {**TRAIN["fused"], "tokens": TOKEN_RECIPE}},
              "evaluate": EVALUATE}
    case = case_params(params, 93, 3)
    assert case["train"]["fused"]["epochs"] == 3
    assert case["train"]["fused"]["tokens"] == {**TOKEN_RECIPE, "epochs": 3}
    at93, at1 = parse_case(params, 93), parse_case(params, 1)
    assert at93.epochs == TOKEN_RECIPE["epochs"] and at1.epochs == TRAIN["fused"]["epochs"]
    assert at93.train.fused.for_ecg_tokens(93).fusion_dim == 8
    per_crop = {**params, "train": {**params["train"], "fused": {
        **TRAIN["fused"], "tokens": {**TOKEN_RECIPE, "epochs_per_crop": True}}}}
    at186 = parse_case(per_crop, 186)           # extrapolates to 2 crops' epochs, times 3
    assert at186.epochs == 2 * TOKEN_RECIPE["epochs"]
    assert at186.train.fused.for_ecg_tokens(186).epochs == 3


def test_the_train_block_answers_per_token_count():
    plain = small_train_config(epochs=3)
    cfg = dataclasses.replace(plain, fused=dataclasses.replace(plain.fused,
                                                               tokens=TOKEN_RECIPE))
    assert (cfg.epochs("fused"), cfg.epochs("fused", 93)) == (3, 4)   # the progress bar's total
    assert cfg.block("fused", 93).fusion_dim == 8 and cfg.block("fused", 93).tokens is None
    assert cfg.block("fused").tokens is None and cfg.block("echo", 93) is cfg.echo


def test_batch_per_crop_scales_the_batch_with_the_records_crops():
    plain = small_train_config(epochs=3)                 # batch_size 32
    recipe = {**TOKEN_RECIPE, "epochs": 1, "batch_per_crop": True}
    cfg = dataclasses.replace(plain, fused=dataclasses.replace(plain.fused, tokens=recipe))
    assert [cfg.batch("fused", n) for n in (1, 16, 93, 186, 279)] == [32, 32, 32, 64, 96]
    assert cfg.batch("concat", 186) == 32 and plain.batch("fused", 186) == 32
    cohort = with_ecg_tokens(make_cohort(n=280, splits=(180, 40, 60)), 186)
    fit = train_probe(probe_spec("fused"), cohort, cfg)
    assert fit.steps == 3                                 # ceil(180 / 64) steps, one epoch
    assert fit.extra["accelerator"] == "fused_tokens"     # any batch steps the same way
    once = dataclasses.replace(cfg, fused=dataclasses.replace(
        plain.fused, tokens={**recipe, "batch_per_crop": False}))
    assert train_probe(probe_spec("fused"), cohort, once).steps == 6   # ceil(180 / 32)
