"""HuBERT-ECG's own extraction path, driven from a checkout the user points at (a child of
extract_vs_hubert.py; nothing of the authors' code is in this repository).

Two steps, as the authors' repository runs them:

1. ``utils.ecg_preprocessing`` on each WFDB record (read with ``wfdb``, leads put in the
   standard order first, as a user must for MIMIC-IV-ECG's files): band-pass, 500 Hz,
   scaling to [-1, 1]; saved as ``<id>.npy`` ``(12, samples)``, a CSV with a ``filename``
   column listing them.
2. ``dumping.dump_latent_features``: their ``ECGDataset`` (first 5 s, decimated by 5), their
   ``DataLoader`` (5 workers), ``HuBERTECG`` (their class) with the weights of ``--weights``
   (config.json + model.safetensors), ``hidden_states[layer]`` saved one ``.npy`` per record.

Usage (from extract_vs_hubert.py)::

    python _hubert_peer.py --hubert-src DIR --deps DIR --records LIST --root DIR \
        --weights DIR --work DIR --layer 12 --batch 4
"""

from __future__ import annotations

import argparse
import csv
import importlib.machinery
import json
import sys
import time
import types
from pathlib import Path

#: The lead order HuBERT-ECG was trained on; MIMIC-IV-ECG's files store aVF before aVL.
STANDARD_LEADS = ("I", "II", "III", "aVR", "aVL", "aVF", "V1", "V2", "V3", "V4", "V5", "V6")


def main() -> int:
    ap = argparse.ArgumentParser()
    for name in ("--hubert-src", "--records", "--root", "--weights", "--work"):
        ap.add_argument(name, required=True)
    ap.add_argument("--deps", default=None, help="extra packages the checkout imports "
                    "(appended to sys.path: this environment's torch and numpy win)")
    ap.add_argument("--pins", default=None, help="the checkout's pinned packages that differ "
                    "from this environment's (transformers 4.46.3: prepended to sys.path)")
    ap.add_argument("--layer", type=int, default=12)
    ap.add_argument("--batch", type=int, default=4)
    args = ap.parse_args()
    t0 = time.perf_counter()
    code = Path(args.hubert_src) / "code"
    sys.path.insert(0, str(code))
    if args.pins:
        sys.path.insert(0, args.pins)
    if args.deps:
        sys.path.append(args.deps)
    import transformers  # noqa: F401  (before the stand-in below: it probes for torchaudio)

    try:
        import torchaudio  # noqa: F401
    except ImportError:          # dumping.py imports it for MFCCs dump_latent_features never
        stand_in = types.ModuleType("torchaudio")                     # uses; no torch 2.13 build
        stand_in.__spec__ = importlib.machinery.ModuleSpec("torchaudio", None)
        sys.modules["torchaudio"] = stand_in
    import numpy as np
    import torch
    import wfdb
    from dumping import dump_latent_features
    from hubert_ecg import HuBERTECG, HuBERTECGConfig
    from safetensors.torch import load_file
    from utils import ecg_preprocessing

    t_import = time.perf_counter()
    work = Path(args.work)
    npy, out = work / "npy", work / "latents"
    npy.mkdir(parents=True)
    out.mkdir()
    rows = list(csv.DictReader(open(args.records, newline="")))
    names = []
    for row in rows:
        sig, fields = wfdb.rdsamp(str(Path(args.root) / row["path"]))
        names_in_file = [n.lower() for n in fields["sig_name"]]
        order = [names_in_file.index(lead.lower()) for lead in STANDARD_LEADS]
        x = ecg_preprocessing(np.asarray(sig, dtype=np.float64).T[order], fields["fs"])
        name = f"{row['study_id']}.npy"
        np.save(npy / name, x.astype(np.float32))
        names.append(name)
    with open(work / "dataset.csv", "w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(["filename"])
        w.writerows([n] for n in names)
    t_pre = time.perf_counter()
    config = json.loads((Path(args.weights) / "config.json").read_text())
    config.pop("model_type", None)
    model = HuBERTECG(HuBERTECGConfig(**config))
    missing, unexpected = model.load_state_dict(load_file(str(Path(args.weights) /
                                                               "model.safetensors")),
                                                strict=False)
    assert not unexpected and all(k.startswith(("final_proj", "label_embedding"))
                                  for k in missing), (missing, unexpected)
    dump_latent_features(str(work / "dataset.csv"), str(npy), str(out), 0.0, 1.0, model,
                         args.layer, 0, args.batch, False)
    t_dump = time.perf_counter()
    print(json.dumps({"imports_s": t_import - t0, "preprocess_s": t_pre - t_import,
                      "dump_s": t_dump - t_pre, "records": len(rows),
                      "threads": torch.get_num_threads()}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
