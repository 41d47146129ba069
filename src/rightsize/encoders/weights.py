"""HuBERT-ECG for extraction: built from its config, with weights from a local folder or seeded.

Weights come from ``folder`` only; nothing is downloaded:

* a Hugging Face-style folder: ``config.json`` (its HuBERT fields build the model; its size
  must be the size asked for) and ``*.safetensors`` (read with ``safetensors``);
* or the authors' state dict: one ``*.pt`` / ``*.pth`` / ``*.bin`` file loaded with
  ``torch.load(weights_only=True)`` (a ``{"model_state_dict": ...}`` checkpoint is unwrapped).
  A checkpoint that pickles objects besides tensors (the authors' training checkpoints keep
  the config object beside the weights) is refused: save ``model_state_dict`` alone.

Key prefixes ``hubert_ecg.`` / ``hubert.`` / ``model.`` are stripped; the pretraining heads
(``final_proj``, ``label_embedding``) and the classification head are ignored and listed;
``weight_g`` / ``weight_v`` of the positional convolution (older ``transformers``) map to
today's weight-norm parametrisation. A missing tensor, an unknown one or a shape that does
not fit raises :class:`~rightsize.errors.DataError` naming the tensor. Without a folder the
model is built with ``torch.manual_seed(seed)``: random weights, features for cost only.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from rightsize.encoders.models import (
    CONV_KERNELS,
    CONV_STRIDES,
    HUBERT_SIZES,
    EcgGeometry,
    build_model,
    make_spec,
)
from rightsize.errors import DataError, InputError
from rightsize.ground.sha256 import sha256_file

PREFIXES = ("hubert_ecg.", "hubert.", "model.")
IGNORED = ("final_proj.", "label_embedding.", "classifier.", "projector.", "head.")
OPTIONAL = ("masked_spec_embed",)          # used only while pretraining
RENAMED = {"encoder.pos_conv_embed.conv.weight_g":
           "encoder.pos_conv_embed.conv.parametrizations.weight.original0",
           "encoder.pos_conv_embed.conv.weight_v":
           "encoder.pos_conv_embed.conv.parametrizations.weight.original1"}
STATE_DICT_SUFFIXES = (".pt", ".pth", ".bin")
RANDOM_NOTE = "random weights (seed {seed}): features for cost only"


def _size_of(config: dict[str, Any]) -> str | None:
    for name, arch in HUBERT_SIZES.items():
        if (config.get("hidden_size"), config.get("num_hidden_layers")) == \
                (arch.hidden, arch.layers):
            return name
    return None


def weight_files(folder: Path) -> list[Path]:
    """The folder's ``*.safetensors``, else its one state dict file; InputError otherwise."""
    if not folder.is_dir():
        raise InputError(f"{folder}: extract.weights folder not found")
    files = sorted(folder.glob("*.safetensors"))
    files = files or sorted(p for p in folder.iterdir() if p.suffix in STATE_DICT_SUFFIXES)
    for f in files:
        if not f.is_file():
            raise DataError(f"{f}: not a regular file (weights are *.safetensors files or "
                            f"one state dict file)")
    if files and files[0].suffix == ".safetensors":
        return files
    if len(files) != 1:
        raise InputError(f"{folder}: want *.safetensors or exactly one state dict file "
                         f"({', '.join(STATE_DICT_SUFFIXES)}), found {len(files)}")
    return files


def weights_identity(size: str, weights: Path | None, seed: int) -> dict[str, Any]:
    """What identifies the weights (files and their SHA-256, or the seed), the model config
    (``config.json``'s SHA-256, or the built-in size) and what the features may be used
    for; no torch needed."""
    built_in = f"built-in HuBERT-ECG {size} {HUBERT_SIZES[size]}, conv kernels " \
               f"{list(CONV_KERNELS)}, strides {list(CONV_STRIDES)}"
    if weights is None:
        return {"weights": None, "seed": seed, "files": None, "model_config": built_in,
                "features": RANDOM_NOTE.format(seed=seed)}
    config, files = weights / "config.json", weight_files(weights)
    try:
        return {"weights": str(weights), "seed": None,
                "files": {f.name: sha256_file(f)[0] for f in files},
                "model_config": f"config.json {sha256_file(config)[0]}" if config.is_file()
                else built_in,
                "features": f"HuBERT-ECG {size} weights from {weights}"}
    except OSError as exc:
        raise InputError(f"{exc.filename or weights}: cannot read "
                         f"({exc.strerror or exc})") from None


def _read_tensors(folder: Path) -> tuple[dict[str, Any], list[Path]]:
    import torch

    files = weight_files(folder)
    if files[0].suffix == ".safetensors":
        from safetensors.torch import load_file

        state: dict[str, Any] = {}
        for f in files:
            try:
                state.update(load_file(str(f)))
            except Exception as exc:  # SafetensorError, OSError
                raise DataError(f"{f}: not a safetensors file ({exc})") from None
        return state, files
    try:
        state = torch.load(files[0], map_location="cpu", weights_only=True)
    except Exception as exc:  # UnpicklingError, RuntimeError: not a plain state dict
        raise _refused(files[0], exc) from None
    if isinstance(state, dict) and isinstance(state.get("model_state_dict"), dict):
        state = state["model_state_dict"]
    if not isinstance(state, dict):
        raise DataError(f"{files[0]}: holds a {type(state).__name__}, not a state dict")
    return state, files


def _refused(path: Path, exc: BaseException) -> DataError:
    """What ``torch.load(weights_only=True)`` refused, in rightsize's words: never torch's own
    text (its escapes and its advice to load pickled code)."""
    import re

    save = "save the state dict alone, e.g. torch.save(checkpoint['model_state_dict'], path)"
    found = re.search(r"Unsupported global: GLOBAL ([\w.]+)", str(exc))
    if found:
        return DataError(f"{path}: refused: it holds a pickled Python object "
                         f"({found.group(1)}) besides tensors, and rightsize loads no pickled "
                         f"code ({save})")
    return DataError(f"{path}: refused: not a file of tensors only (torch's restricted loader "
                     f"cannot read it, and rightsize loads no pickled code; {save})")


def _normalise(state: dict[str, Any]) -> tuple[dict[str, Any], list[str]]:
    out, ignored = {}, []
    for key, value in state.items():
        k = key
        for p in PREFIXES:
            if k.startswith(p):
                k = k[len(p):]
                break
        if k.startswith(IGNORED):
            ignored.append(key)
            continue
        out[RENAMED.get(k, k)] = value
    return out, ignored


def load_into(model: Any, state: dict[str, Any], where: str) -> list[str]:
    """Load ``state`` into ``model`` strictly; DataError names the first tensor that does not
    fit. Returns the keys ignored (pretraining and classification heads)."""
    import torch

    state, ignored = _normalise(state)
    own = model.state_dict()
    for key, value in state.items():
        if key not in own:
            raise DataError(f"{where}: tensor {key} is not part of this HuBERT-ECG "
                            f"({len(own)} tensors)")
        if not isinstance(value, torch.Tensor):
            raise DataError(f"{where}: {key} holds a {type(value).__name__}, not a tensor")
        if tuple(value.shape) != tuple(own[key].shape):
            raise DataError(f"{where}: tensor {key} has shape {tuple(value.shape)}, the model "
                            f"needs {tuple(own[key].shape)}")
        if value.is_floating_point() and not bool(torch.isfinite(value).all()):
            bad = int((~torch.isfinite(value)).sum())
            raise DataError(f"{where}: tensor {key} holds {bad} non-finite values (NaN or inf)")
    missing = [k for k in own if k not in state and k not in OPTIONAL]
    if missing:
        raise DataError(f"{where}: tensor {missing[0]} missing ({len(missing)} missing)")
    model.load_state_dict(state, strict=False)
    return ignored


def build_extractor(size: str, weights: Path | None, seed: int, depth: int,
                    geometry: EcgGeometry) -> tuple[Any, dict[str, Any]]:
    """HuBERT-ECG ``size`` truncated to ``depth`` layers, on the CPU, in eval mode, and a
    provenance dict (``features``: what the outputs may be used for)."""
    import torch

    spec = make_spec("hubert_ecg", size, geometry, "extract")
    provenance = weights_identity(size, weights, seed)
    if weights is None:
        torch.manual_seed(seed)
        model = build_model(spec, "cpu")
    else:
        config_path = weights / "config.json"
        config = None
        if config_path.is_file():
            try:
                config = json.loads(config_path.read_text(encoding="utf-8"))
            except (OSError, ValueError) as exc:
                raise DataError(f"{config_path}: not JSON ({exc})") from None
            if not isinstance(config, dict):
                raise DataError(f"{config_path}: expected a JSON object of HuBERT settings, "
                                f"got a {type(config).__name__}")
            found = _size_of(config)
            if found != size:
                raise DataError(f"{config_path}: hidden_size {config.get('hidden_size')}, "
                                f"num_hidden_layers {config.get('num_hidden_layers')} is "
                                f"{'HuBERT-ECG ' + found if found else 'no HuBERT-ECG size'}; "
                                f"extract.size is {size}")
        model = _build_from_config(spec, config, config_path)
        state, _ = _read_tensors(weights)
        ignored = load_into(model, state, str(weights))
        provenance.update(config="config.json" if config else f"HuBERT-ECG {size} (built in)",
                          ignored_tensors=ignored)
    keep = max(depth, 1)         # hidden state 0 (the embeddings output) is the first
    model.encoder.layers = model.encoder.layers[:keep]   # layer's input: keep one layer
    model.config.num_hidden_layers = keep
    return model.eval(), provenance


def conv_tokens(kernels: Any, strides: Any, samples: int) -> int:
    """Tokens a conv stack of ``kernels`` / ``strides`` makes of ``samples`` samples."""
    for kernel, stride in zip(kernels, strides, strict=True):
        samples = (samples - int(kernel)) // int(stride) + 1
    return samples


def _build_from_config(spec: Any, config: dict[str, Any] | None, path: Path) -> Any:
    """The model built from ``config`` (a weights folder's ``config.json``); DataError naming
    the key whose value no HuBERT-ECG can have, or that gives another token count."""
    from rightsize.encoders.models import conv_lengths

    if config is not None:
        heads, hidden = config.get("num_attention_heads"), config.get("hidden_size")
        if isinstance(heads, int) and isinstance(hidden, int) and (
                heads <= 0 or hidden % heads):
            raise DataError(f"{path}: num_attention_heads {heads} does not divide "
                            f"hidden_size {hidden}")
    try:
        model = build_model(spec, "cpu", config=config)
    except (ValueError, TypeError, KeyError, AttributeError, RuntimeError) as exc:
        raise DataError(f"{path}: transformers cannot build a HuBERT model from it "
                        f"({str(exc).splitlines()[0][:160]})") from None
    c = model.config
    samples = spec.geometry.input_samples
    want = conv_lengths(samples)[-1]
    try:
        got = conv_tokens(c.conv_kernel, c.conv_stride, samples)
    except (TypeError, ValueError):
        got = -1
    if got != want:
        keys = [k for k, ref in (("conv_kernel", CONV_KERNELS), ("conv_stride", CONV_STRIDES))
                if tuple(getattr(c, k)) != ref] or ["conv_kernel", "conv_stride"]
        raise DataError(f"{path}: {', '.join(f'{k} {list(getattr(c, k))}' for k in keys)} "
                        f"gives {got} tokens per {samples:,}-sample input; HuBERT-ECG's "
                        f"geometry (conv_kernel {list(CONV_KERNELS)}, conv_stride "
                        f"{list(CONV_STRIDES)}) gives {want}")
    return model
