"""The shape-matched encoders: tokens from real output shapes equal the conv/patch arithmetic,
bytes equal tokens x hidden x layers x dtype, FLOPs agree with the analytic count."""

from __future__ import annotations

import pytest
import torch

from rightsize.encoders.models import (
    HUBERT_SIZES,
    VJEPA2_SIZES,
    EcgGeometry,
    VideoGeometry,
    analytic_flops,
    build_model,
    conv_lengths,
    example_input,
    expected_tokens,
    forward_hidden_states,
    make_spec,
)
from rightsize.errors import ParamsError
from rightsize.sizing.bench import bench_encoder, count_shapes_and_flops
from rightsize.sizing.units import DTYPE_BYTES


def test_conv_arithmetic_by_hand() -> None:
    # 12 leads x 2,500 samples / 5 = 6,000; kernels (10,3,3,2,2), strides (4,2,2,2,2)
    assert EcgGeometry().input_samples == 6000
    assert conv_lengths(6000) == [1498, 748, 373, 186, 93]
    assert expected_tokens(make_spec("hubert_ecg", "base", EcgGeometry())) == 93
    # EchoJEPA's evaluation: 16 frames / tubelet 2 x (224 / 16)^2 patches, two clips a video
    assert VideoGeometry() == VideoGeometry(frames=16, resolution=224, clips_per_record=2)
    assert expected_tokens(make_spec("echojepa", "vitl", VideoGeometry())) == 1568
    assert expected_tokens(make_spec("echojepa", "vitl", VideoGeometry(resolution=256))) == 2048
    assert EcgGeometry().crops_per_record == 1


MODELS = ([("hubert_ecg", size, HUBERT_SIZES[size], EcgGeometry(crops_per_record=2), 93)
           for size in HUBERT_SIZES]
          + [("echojepa", size, VJEPA2_SIZES[size], VideoGeometry(), 1568)
             for size in VJEPA2_SIZES])


@pytest.mark.parametrize(("family", "size", "arch", "geometry", "tokens"), MODELS,
                         ids=[f"{m[0]}-{m[1]}" for m in MODELS])
def test_tokens_and_flops_from_the_model(family, size, arch, geometry, tokens) -> None:
    spec = make_spec(family, size, geometry)
    got = count_shapes_and_flops(spec)
    assert got["tokens_per_state"] == [tokens] * (arch.layers + 1)
    assert got["hidden_size"] == arch.hidden
    analytic = analytic_flops(spec)
    assert got["flops"] == pytest.approx(analytic["total"], rel=0.10)
    assert got["layer_flops"] == pytest.approx(analytic["transformer_layers"], rel=0.10)


def test_other_geometry_moves_the_tokens() -> None:
    spec = make_spec("echojepa", "vitl", VideoGeometry(frames=8, resolution=224))
    assert count_shapes_and_flops(spec)["tokens_per_state"][-1] == 4 * 14 * 14
    wide = make_spec("echojepa", "vitl", VideoGeometry(resolution=256))
    assert count_shapes_and_flops(wide)["tokens_per_state"][-1] == 8 * 16 * 16


def test_echo_record_is_a_video_of_clips() -> None:
    spec = make_spec("echojepa", "vitl", VideoGeometry(frames=2, resolution=32))
    out = bench_encoder(spec, "cpu", (1, 2), repeats=3, warmup=0, cpu_timing_layers=1)
    assert out["inputs_per_record"] == 2 and out["tokens_per_input"] == 1 * 2 * 2
    assert out["tokens_per_record"] == 8
    assert out["geometry"] == {"frames": 2, "resolution": 32, "clips_per_record": 2,
                               "patch": 16, "tubelet": 2}
    assert out["bytes_per_record"]["float16"]["pooled_one_layer"] == 2 * 1024 * 2
    one = out["throughput"]["batch_1"]                          # one clip = half a video
    assert one["records_per_s"] == pytest.approx(0.5 / one["median_s"])


def test_real_forward_on_cpu_has_the_meta_shapes() -> None:
    spec = make_spec("hubert_ecg", "small", EcgGeometry())
    torch.manual_seed(0)
    model = build_model(spec, "cpu", layers=2)
    with torch.inference_mode():
        states = forward_hidden_states(model, spec, example_input(spec, 3))
    assert [tuple(s.shape) for s in states] == [(3, 93, 512)] * 3
    assert all(torch.isfinite(s).all() for s in states)


def test_bench_bytes_tokens_and_oom_limit() -> None:
    spec = make_spec("hubert_ecg", "small", EcgGeometry(crops_per_record=2))
    out = bench_encoder(spec, "cpu", (1, 10**10, 10**11), repeats=3, warmup=0,
                        cpu_timing_layers=1)
    assert out["tokens_per_input"] == out["tokens_per_input_arithmetic"] == 93
    assert out["tokens_per_record"] == 186 and out["hidden_states"] == 9
    for dtype, width in DTYPE_BYTES.items():
        b = out["bytes_per_record"][dtype]
        assert b["one_layer"] == 186 * 512 * width
        assert b["all_layers"] == 186 * 512 * 9 * width
    assert out["flops_per_record"] == 2 * out["flops_per_input"]
    ok, oom, skipped = (out["throughput"][f"batch_{b}"] for b in (1, 10**10, 10**11))
    assert ok["status"] == "ok" and ok["repeats"] == 3 and ok["records_per_s"] > 0
    assert ok["min_s"] <= ok["median_s"] <= ok["max_s"] and ok["peak_mem_mb"] > 0
    assert oom["status"] == "out_of_memory" and "allocate" in oom["error"]
    assert skipped["status"] == "skipped"
    assert out["oom_batch"] == 10**10 and out["max_batch_ok"] == 1
    timing = out["timing"]
    one_layer = count_shapes_and_flops(spec, layers=1)["flops"]
    assert timing["extrapolated"] and timing["layers_timed"] == 1
    assert timing["flop_scale"] == pytest.approx(out["flops_per_input"] / one_layer)


@pytest.mark.parametrize(("family", "size", "needle"), [
    ("hubert_ecg", "huge", r"^m\.size: unknown hubert_ecg size 'huge' \(known: small, base, "
                           r"large\)$"),
    ("echojepa", "vitb", r"^m\.size: unknown echojepa size 'vitb' \(known: vitl, vith, vitg\)$"),
    ("wav2vec", "base", r"^m\.family: unknown encoder 'wav2vec' \(known: echojepa, hubert_ecg\)$"),
])
def test_unknown_size_names_the_options(family: str, size: str, needle: str) -> None:
    geometry = EcgGeometry() if family != "echojepa" else VideoGeometry()
    with pytest.raises(ParamsError, match=needle):
        make_spec(family, size, geometry, "m")
