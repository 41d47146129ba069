"""Shape-matched encoders: HuBERT-ECG and EchoJEPA as specs, arithmetic and random-weight models.

* HuBERT-ECG is a HuBERT model at three published sizes (:data:`HUBERT_SIZES`). One model
  input is 12 leads x 5 s at 500 Hz, flattened lead after lead and then decimated x5 over
  the flattened signal to 6,000 samples (:mod:`rightsize.encoders.preprocess`); its conv
  feature extractor is 5 layers of 512 channels, kernels (10, 3, 3, 2, 2), strides
  (4, 2, 2, 2, 2): 93 tokens, each 64 samples = 0.64 s of one lead apart
  (:mod:`rightsize.cohort.token_layout`). A record of ``crops_per_record`` crops is that
  many model inputs.
* EchoJEPA is a V-JEPA 2 video encoder (:data:`VJEPA2_SIZES`: ViT-L/H/g). Its input by
  default is EchoJEPA's published ViT-L evaluation geometry (bowang-lab/EchoJEPA,
  ``configs/eval/vitl/echojepa_lvef.yaml``: ``resolution: 224``, ``frames_per_clip: 16``,
  ``num_segments: 2``, ``patch_size: 16``, ``tubelet_size: 2``): 16 frames at 224 x 224 ->
  8 x 14 x 14 = 1,568 tokens per clip, two clips per video. A record is one video of
  ``clips_per_record`` clips; V-JEPA 2's 256 px pretraining geometry stays selectable.

:func:`build_model` is the only place in rightsize that imports ``transformers``; it builds
from a config with random weights (never ``from_pretrained``: nothing is downloaded).
FLOPs here count a multiply-add as 2, as ``torch.utils.flop_counter`` does, and only the
matmuls, convolutions and attention products (elementwise work is not counted).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Arch:
    """Transformer size: hidden width, layers, attention heads, feed-forward width."""

    hidden: int
    layers: int
    heads: int
    ffn: int


#: HuBERT-ECG published sizes (hidden / layers / heads / FFN).
HUBERT_SIZES: dict[str, Arch] = {
    "small": Arch(512, 8, 8, 2048),
    "base": Arch(768, 12, 12, 3072),
    "large": Arch(960, 16, 12, 3840),
}
#: V-JEPA 2 encoder sizes (ViT-L 300M, ViT-H 600M, ViT-g 1B).
VJEPA2_SIZES: dict[str, Arch] = {
    "vitl": Arch(1024, 24, 16, 4096),
    "vith": Arch(1280, 32, 16, 5120),
    "vitg": Arch(1408, 40, 22, 6144),
}
FAMILIES: dict[str, dict[str, Arch]] = {"hubert_ecg": HUBERT_SIZES, "echojepa": VJEPA2_SIZES}

CONV_DIM = 512
CONV_KERNELS = (10, 3, 3, 2, 2)
CONV_STRIDES = (4, 2, 2, 2, 2)
POS_CONV_KERNEL = 128
POS_CONV_GROUPS = 16
PATCH = 16
TUBELET = 2
CHANNELS = 3


@dataclass(frozen=True)
class EcgGeometry:
    """HuBERT-ECG input: ``leads`` x ``crop_s`` s at ``sample_hz``, decimated by ``decimate``."""

    leads: int = 12
    sample_hz: int = 500
    crop_s: float = 5.0
    decimate: int = 5
    crops_per_record: int = 1

    @property
    def crop_samples(self) -> int:
        """Samples per lead in one crop before decimation (2,500)."""
        return int(round(self.crop_s * self.sample_hz))

    @property
    def input_samples(self) -> int:
        """Model input length: leads x decimated samples per lead (6,000)."""
        return self.leads * (self.crop_samples // self.decimate)


@dataclass(frozen=True)
class VideoGeometry:
    """EchoJEPA input: clips of ``frames`` RGB frames at ``resolution`` x ``resolution``.

    The defaults are EchoJEPA's ViT-L evaluation (224 px, 16 frames, two clips per video).
    """

    frames: int = 16
    resolution: int = 224
    clips_per_record: int = 2


@dataclass(frozen=True)
class EncoderSpec:
    """One encoder at one size over one input geometry; ``inputs_per_record`` inputs a record."""

    family: str
    size: str
    arch: Arch
    geometry: EcgGeometry | VideoGeometry

    @property
    def inputs_per_record(self) -> int:
        """Model inputs per record (ECG crops, or clips of one video)."""
        g = self.geometry
        return g.crops_per_record if isinstance(g, EcgGeometry) else g.clips_per_record

    @property
    def input_shape(self) -> tuple[int, ...]:
        """Shape of one model input, without the batch dimension."""
        g = self.geometry
        if isinstance(g, EcgGeometry):
            return (g.input_samples,)
        return (g.frames, CHANNELS, g.resolution, g.resolution)


def check_family_size(family: str, size: str, key: str) -> None:
    """``ParamsError`` naming ``<key>.family`` / ``<key>.size`` and the known options."""
    from rightsize.params import require_one_of

    require_one_of(family, sorted(FAMILIES), f"{key}.family", "encoder")
    require_one_of(size, list(FAMILIES[family]), f"{key}.size", f"{family} size")


def make_spec(family: str, size: str, geometry: EcgGeometry | VideoGeometry,
              key: str = "encoder_bench") -> EncoderSpec:
    """Look up ``size`` of ``family``; an unknown one raises ``ParamsError`` naming the options."""
    from rightsize.errors import ParamsError

    check_family_size(family, size, key)
    sizes = FAMILIES[family]
    want = EcgGeometry if family == "hubert_ecg" else VideoGeometry
    if not isinstance(geometry, want):
        raise ParamsError(f"{key}: {family} needs a {want.__name__}")
    return EncoderSpec(family, size, sizes[size], geometry)


def conv_lengths(samples: int) -> list[int]:
    """Output length after each conv layer: ``L -> floor((L - kernel) / stride) + 1``."""
    out, length = [], samples
    for kernel, stride in zip(CONV_KERNELS, CONV_STRIDES, strict=True):
        length = (length - kernel) // stride + 1
        out.append(length)
    return out


def expected_tokens(spec: EncoderSpec) -> int:
    """Tokens per model input from the input geometry alone (conv stack or patch grid)."""
    g = spec.geometry
    if isinstance(g, EcgGeometry):
        return conv_lengths(g.input_samples)[-1]
    return (g.frames // TUBELET) * (g.resolution // PATCH) ** 2


def analytic_flops(spec: EncoderSpec) -> dict[str, int]:
    """FLOPs of one model input, by hand: ``transformer_layers``, ``front_end`` and ``total``.

    A layer costs ``2T(4h^2 + 2hf)`` for its projections and MLP plus ``4T^2h`` for the
    attention scores and weighted values (T tokens, h hidden, f FFN). The front end is the
    conv feature extractor, feature projection and positional conv (HuBERT) or the tubelet
    patch embedding (V-JEPA 2).
    """
    a, t = spec.arch, expected_tokens(spec)
    layers = a.layers * (2 * t * (4 * a.hidden**2 + 2 * a.hidden * a.ffn) + 4 * t * t * a.hidden)
    g = spec.geometry
    if isinstance(g, EcgGeometry):
        lengths = conv_lengths(g.input_samples)
        front, in_ch = 0, 1
        for length, kernel in zip(lengths, CONV_KERNELS, strict=True):
            front += 2 * length * kernel * in_ch * CONV_DIM
            in_ch = CONV_DIM
        front += 2 * t * CONV_DIM * a.hidden                                  # projection
        pos_len = t + 2 * (POS_CONV_KERNEL // 2) - POS_CONV_KERNEL + 1        # padded conv
        front += 2 * pos_len * POS_CONV_KERNEL * (a.hidden // POS_CONV_GROUPS) * a.hidden
    else:
        front = 2 * t * (CHANNELS * TUBELET * PATCH * PATCH) * a.hidden
    return {"transformer_layers": layers, "front_end": front, "total": layers + front}


#: Keys of a Hugging Face config.json that describe the file, not the model.
CONFIG_FILE_KEYS = ("architectures", "model_type", "transformers_version", "auto_map",
                    "_name_or_path", "torch_dtype", "dtype")


def build_model(spec: EncoderSpec, device: Any = "cpu", layers: int | None = None,
                config: dict[str, Any] | None = None) -> Any:
    """The encoder with random weights on ``device`` (``"meta"`` allocates nothing), in eval mode.

    ``layers`` truncates the transformer to that many layers (same input shape and width).
    ``config`` (HuBERT-ECG only): a Hugging Face ``config.json``'s fields, which then build
    the model instead of the spec's (a weights folder's own settings).
    """
    import os

    os.environ.setdefault("HF_HUB_OFFLINE", "1")   # configs only: never reach the Hub
    import torch
    from transformers import HubertConfig, HubertModel, VJEPA2Config, VJEPA2Model

    a = spec.arch
    depth = a.layers if layers is None else layers
    g = spec.geometry
    if isinstance(g, EcgGeometry) and config is not None:
        given = {k: v for k, v in config.items() if k not in CONFIG_FILE_KEYS}
        hf_config = HubertConfig(**{**given, "num_hidden_layers": layers or
                                    given.get("num_hidden_layers", a.layers)})
        cls = HubertModel
    elif isinstance(g, EcgGeometry):
        hf_config = HubertConfig(
            hidden_size=a.hidden, num_hidden_layers=depth, num_attention_heads=a.heads,
            intermediate_size=a.ffn, conv_dim=(CONV_DIM,) * len(CONV_KERNELS),
            conv_kernel=CONV_KERNELS, conv_stride=CONV_STRIDES,
            num_conv_pos_embeddings=POS_CONV_KERNEL,
            num_conv_pos_embedding_groups=POS_CONV_GROUPS)
        cls = HubertModel
    else:
        hf_config = VJEPA2Config(
            hidden_size=a.hidden, num_hidden_layers=depth, num_attention_heads=a.heads,
            mlp_ratio=a.ffn / a.hidden, crop_size=g.resolution, frames_per_clip=g.frames,
            patch_size=PATCH, tubelet_size=TUBELET)
        cls = VJEPA2Model
    with torch.device(device):
        model = cls(hf_config)
    return model.eval()


def example_input(spec: EncoderSpec, batch: int, device: Any = "cpu",
                  dtype: Any = None) -> Any:
    """A random batch of ``batch`` model inputs (uninitialised memory on ``meta``)."""
    import torch

    shape = (batch, *spec.input_shape)
    if str(device) == "meta":
        return torch.empty(shape, device="meta", dtype=dtype)
    return torch.randn(shape, device=device, dtype=dtype)


def forward_hidden_states(model: Any, spec: EncoderSpec, x: Any) -> tuple[Any, ...]:
    """Run ``model`` on ``x`` and return every hidden state (embeddings output first)."""
    if spec.family == "hubert_ecg":
        out = model(x, output_hidden_states=True)
    else:
        out = model(x, skip_predictor=True, output_hidden_states=True)
    return tuple(out.hidden_states)


def parameter_count(model: Any, spec: EncoderSpec) -> int:
    """Parameters of the encoder (V-JEPA 2's predictor excluded: it is not run here)."""
    module = model.encoder if spec.family == "echojepa" else model
    return int(sum(p.numel() for p in module.parameters()))
