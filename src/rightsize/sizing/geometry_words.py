"""Which input geometry a bench sized, in words, and whose published setup it is.

ECG: crops of 5 s per record (one crop: the first 5 s of a 10-s ECG, the window
HuBERT-ECG's embedding-dump path keeps; two: the whole 10 s). Echo: frames, resolution and
clips per video, named after EchoJEPA's ViT-L config it matches: the LVEF evaluation config
(224 px) or the LVEF inference config (336 px, "keep identical to training config").
Every file is cited through :mod:`rightsize.citations`.
"""

from __future__ import annotations

from typing import Any

from rightsize.citations import cite

#: EchoJEPA's published ViT-L geometries: (frames, resolution, clips per video) -> config.
ECHOJEPA_GEOMETRIES = {(16, 224, 2): ("EchoJEPA's ViT-L LVEF evaluation config",
                                      "echojepa_eval"),
                       (16, 336, 2): ("EchoJEPA's ViT-L LVEF inference config",
                                      "echojepa_inference")}


def geometry_words(family: str, g: dict[str, Any], tokens_per_input: int | None) -> str:
    """``1 crop of 5 s per ECG record (the first 5 s of a 10-s ECG), 93 tokens each`` or
    ``16 frames × 224 px, 2 clips per video (EchoJEPA's ViT-L LVEF evaluation config)``."""
    if family == "hubert_ecg":
        n = int(g.get("crops_per_record") or 1)
        which = "the first 5 s of a 10-s ECG" if n == 1 else f"{5 * n} s of ECG"
        return (f"{n} crop{'s' if n != 1 else ''} of 5 s per ECG record ({which}), "
                f"{tokens_per_input} tokens each")
    key = (g.get("frames"), g.get("resolution"), g.get("clips_per_record"))
    label = ECHOJEPA_GEOMETRIES.get(key, ("not a published EchoJEPA ViT-L geometry", ""))[0]
    return (f"{key[0]} frames × {key[1]} px, {key[2]} clips per video, "
            f"{tokens_per_input:,} tokens per clip ({label})")


def geometry_notes(benches: dict[str, dict[str, Any]]) -> list[str]:
    """One note per bench: the geometry sized, its source, and the other published option."""
    out = []
    for m, b in benches.items():
        g = b.get("geometry") or {}
        words = geometry_words(b["family"], g, b.get("tokens_per_input"))
        if b["family"] == "hubert_ecg":
            other = ("crops_per_record: 2 sizes the whole 10-s record (2 x the tokens, FLOPs "
                     "and compute; see the recovered_cohort_10s scenario)"
                     if int(g.get("crops_per_record") or 1) == 1 else
                     "crops_per_record: 1 sizes the first 5 s")
            out.append(f"{m}: sized at {words}; {other}. Preprocessing as HuBERT-ECG "
                       f"recommends ({cite('hubert_readme')}): band-pass and scaling as in "
                       f"{cite('hubert_utils')} (ecg_preprocessing), then crop, flatten the 12 "
                       f"leads and decimate as in {cite('hubert_dataset')}.")
        else:
            out.append(f"{m}: sized at {words}. EchoJEPA's ViT-L configs: evaluation at 224 px "
                       f"({cite('echojepa_eval')}), inference at 336 px "
                       f"({cite('echojepa_inference')}: 3,528 tokens per clip, about 2.8x "
                       f"the FLOPs); set encoder_bench.models.{m}.resolution to size the "
                       f"other.")
    return out
