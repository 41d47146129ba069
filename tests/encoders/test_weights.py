"""HuBERT-ECG weights from a local folder: Hugging Face style or the authors' state dict;
anything that does not fit is exit 4 naming the tensor; no folder = seeded random weights."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch
from safetensors.torch import save_file

from rightsize.encoders.models import EcgGeometry
from rightsize.encoders.weights import build_extractor, weights_identity
from rightsize.errors import DataError, InputError

G = EcgGeometry()


def _reference(seed: int = 3) -> tuple[torch.nn.Module, dict[str, torch.Tensor]]:
    model, prov = build_extractor("small", None, seed, 8, G)
    assert prov["features"] == f"random weights (seed {seed}): features for cost only"
    return model, {k: v.detach().clone().contiguous() for k, v in model.state_dict().items()}


def _out(model: torch.nn.Module) -> torch.Tensor:
    x = torch.linspace(-1, 1, 6000).reshape(1, 6000)
    with torch.inference_mode():
        return model(x, output_hidden_states=True).hidden_states[-1]


def test_hugging_face_folder_loads_and_is_identified(tmp_path: Path) -> None:
    ref, state = _reference()
    save_file(state, str(tmp_path / "model.safetensors"))
    config = {**ref.config.to_dict(), "model_type": "hubert_ecg",
              "architectures": ["HuBERTECG"], "num_hidden_layers": 8}
    (tmp_path / "config.json").write_text(json.dumps(config))
    model, prov = build_extractor("small", tmp_path, 0, 8, G)
    torch.testing.assert_close(_out(model), _out(ref), rtol=0, atol=0)
    assert prov["features"] == f"HuBERT-ECG small weights from {tmp_path}"
    assert prov["files"] == weights_identity("small", tmp_path, 0)["files"]
    assert len(prov["files"]["model.safetensors"]) == 64


def test_authors_state_dict_with_prefix_heads_and_old_weight_norm(tmp_path: Path) -> None:
    ref, state = _reference()
    renamed = {}
    for k, v in state.items():
        k = k.replace("parametrizations.weight.original0", "weight_g") \
             .replace("parametrizations.weight.original1", "weight_v")
        renamed[f"hubert_ecg.{k}"] = v
    renamed["final_proj.0.weight"] = torch.zeros(256, 512)
    renamed["label_embedding.0.weight"] = torch.zeros(100, 256)
    torch.save({"model_state_dict": renamed, "global_step": 7}, tmp_path / "hubert_ecg.pt")
    model, prov = build_extractor("small", tmp_path, 0, 8, G)
    torch.testing.assert_close(_out(model), _out(ref), rtol=0, atol=0)
    assert prov["ignored_tensors"] == ["final_proj.0.weight", "label_embedding.0.weight"]


@pytest.mark.parametrize("damage,match", [
    ("drop", r"tensor encoder\.layers\.3\.attention\.q_proj\.weight missing"),
    ("shape", r"tensor encoder\.layers\.3\.attention\.q_proj\.weight has shape \(512, 500\), "
              r"the model needs \(512, 512\)"),
    ("extra", r"tensor encoder\.layers\.9\.attention\.q_proj\.weight is not part of"),
])
def test_weights_that_do_not_fit_name_the_tensor(tmp_path: Path, damage: str,
                                                 match: str) -> None:
    _, state = _reference()
    key = "encoder.layers.3.attention.q_proj.weight"
    if damage == "drop":
        del state[key]
    elif damage == "shape":
        state[key] = torch.zeros(512, 500)
    else:
        state["encoder.layers.9.attention.q_proj.weight"] = torch.zeros(512, 512)
    save_file(state, str(tmp_path / "model.safetensors"))
    with pytest.raises(DataError, match=match):
        build_extractor("small", tmp_path, 0, 8, G)


def test_pickled_objects_and_wrong_size_are_refused(tmp_path: Path) -> None:
    import argparse  # the authors' checkpoints pickle their config object

    torch.save({"model_state_dict": {}, "model_config": argparse.Namespace(hidden=512)},
               tmp_path / "ckpt.pt")
    with pytest.raises(DataError, match=r"ckpt.pt: refused: it holds a pickled Python object "
                       r"\(argparse.Namespace\) besides tensors") as e:
        build_extractor("small", tmp_path, 0, 8, G)
    assert "\x1b" not in str(e.value) and "trust" not in str(e.value)    # not torch's words
    (tmp_path / "ckpt.pt").unlink()
    (tmp_path / "config.json").write_text(json.dumps({"hidden_size": 768,
                                                      "num_hidden_layers": 12}))
    save_file({"x": torch.zeros(1)}, str(tmp_path / "model.safetensors"))
    with pytest.raises(DataError, match="is HuBERT-ECG base; extract.size is small"):
        build_extractor("small", tmp_path, 0, 8, G)
    with pytest.raises(InputError, match="extract.weights folder not found"):
        build_extractor("small", tmp_path / "absent", 0, 8, G)


def test_the_seed_decides_random_weights() -> None:
    a, _ = build_extractor("small", None, 1, 2, G)
    b, _ = build_extractor("small", None, 1, 2, G)
    c, _ = build_extractor("small", None, 2, 2, G)
    torch.testing.assert_close(_out(a), _out(b), rtol=0, atol=0)
    assert not torch.equal(_out(a), _out(c))
