"""rightsize extract against HuBERT-ECG's own extraction path: same records, model and weights.

HuBERT-ECG's side runs the authors' functions from a checkout the user points at
(``--hubert-src``, never copied here; see ``_hubert_peer.py``): their preprocessing to
``.npy``, then their ``dump_latent_features`` with their dataset, DataLoader and per-record
saving. Our side is ``rightsize extract`` as ``dvc repro`` runs it, in float32 and in
``compute_dtype: auto`` (bfloat16 on a CPU with AMX or AVX512-BF16). Both read the same WFDB
records (``rightsize ecg-demo``'s 200, listed again under new ids up to ``--records``) and
load the same weights from one folder (seeded random HuBERT-ECG ``--size``, written as
config.json + model.safetensors). Every run is a whole process, the sides alternated each
round; the result gives medians, ratios and how close our float32 tokens are to theirs.

The checkout imports packages this project does not need (loguru, neurokit2, biosppy,
torchmetrics, ...): install them into a folder and pass it as ``--deps`` (appended to the
path, so this environment's torch, numpy and scipy are used on both sides). Its model code
needs its pinned transformers (4.46.3; 5.x no longer returns an encoder's hidden states from
their ``forward``): ``--pins``, put first on the peer's path. torchaudio (imported for MFCCs
the dump never computes) has no build for this torch: the peer stands in an empty module.

Usage::

    pip install --target /tmp/hubert-deps loguru neurokit2 biosppy peakutils torchmetrics \
        torcheval iterative-stratification tqdm joblib   # then remove torch/numpy from the target
    pip install --target /tmp/hubert-pins --no-deps transformers==4.46.3 tokenizers==0.20.3 \
        huggingface_hub==0.26.5
    python benchmarks/extract_vs_hubert.py --hubert-src ../HuBERT-ECG --deps /tmp/hubert-deps \
        --pins /tmp/hubert-pins
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

import yaml

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _measure import machine_info, run_process, write_result  # noqa: E402
from extract_bench import _extend  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
HERE = Path(__file__).resolve().parent
LAYER = {"small": 8, "base": 12, "large": 16}
SIDES = ("hubert", "float32", "auto")

WRITE_WEIGHTS = """
import json, sys, torch
from pathlib import Path
from safetensors.torch import save_file
from rightsize.encoders.models import EcgGeometry
from rightsize.encoders.weights import build_extractor
model, _ = build_extractor(sys.argv[1], None, 0, int(sys.argv[3]), EcgGeometry())
out = Path(sys.argv[2]); out.mkdir()
(out / 'config.json').write_text(model.config.to_json_string())
state = {k: v.contiguous() for k, v in model.state_dict().items()}
save_file(state, str(out / 'model.safetensors'))
"""

AGREEMENT = """
import glob, json, sys, numpy as np, pyarrow.parquet as pq
ours = np.concatenate([np.asarray(pq.read_table(p).column('embedding').to_pylist(), np.float32)
                       for p in sorted(glob.glob(sys.argv[1] + '/shards/*.parquet'))])
ids = [i for p in sorted(glob.glob(sys.argv[1] + '/shards/*.parquet'))
       for i in pq.read_table(p).column('study_id').to_pylist()]
theirs = np.stack([np.load(f"{sys.argv[2]}/{i}.npy") for i in ids])
d = ours - theirs
rel = float(np.sqrt((d**2).mean() / (theirs**2).mean()))
print(json.dumps({'records': len(ids), 'rel_rms': rel,
                  'max_abs': float(np.abs(d).max()), 'ref_max_abs': float(np.abs(theirs).max())}))
"""


def _rs(*args: str) -> list[str]:
    return [str(Path(sys.executable).parent / "rightsize"), *args]


def _params(folder: Path, records: int, size: str, batch: int, weights: str) -> None:
    p = yaml.safe_load((REPO / "params.yaml").read_text())
    p["ecg_demo"]["records"] = records
    p["extract"].update(size=size, layers=[LAYER[size]], batch_size=batch, weights=weights,
                        records="corpus/record_list.csv", root="corpus")
    (folder / "params.yaml").write_text(yaml.safe_dump(p, sort_keys=False))


def _ours(t: Path, dtype: str, i: int) -> tuple[float, dict]:
    p = yaml.safe_load((t / "params.yaml").read_text())
    p["extract"]["compute_dtype"] = dtype
    (t / "params.yaml").write_text(yaml.safe_dump(p, sort_keys=False))
    run = run_process(_rs("extract", "--params", "params.yaml", "--out", f"ours_{dtype}_{i}",
                          "--metrics", f"m_{dtype}_{i}.json", "-q"), cwd=t,
                      env={**os.environ, "OMP_NUM_THREADS": "1"})
    assert run.rc == 0, run.stderr
    return run.wall_s, json.loads((t / f"m_{dtype}_{i}.json").read_text())


def _theirs(t: Path, args: argparse.Namespace, i: int) -> tuple[float, dict]:
    argv = [sys.executable, str(HERE / "_hubert_peer.py"), "--hubert-src", args.hubert_src,
            "--records", "corpus/record_list.csv", "--root", "corpus", "--weights", "weights",
            "--work", f"hubert_{i}", "--layer", str(LAYER[args.size]), "--batch",
            str(args.batch)] + (["--deps", args.deps] if args.deps else []) \
        + (["--pins", args.pins] if args.pins else [])
    run = run_process(argv, cwd=t)
    assert run.rc == 0, run.stderr[-3000:]
    return run.wall_s, json.loads(run.stdout.strip().splitlines()[-1])


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--hubert-src", required=True, help="a checkout of HuBERT-ECG's repository")
    ap.add_argument("--deps", default=None, help="folder of the packages the checkout imports")
    ap.add_argument("--pins", default=None, help="folder of the checkout's pins that differ "
                    "from this environment (transformers==4.46.3 and its tokenizers, "
                    "huggingface_hub): put first on the peer's path")
    ap.add_argument("--records", type=int, default=1000)
    ap.add_argument("--size", default="base", choices=sorted(LAYER))
    ap.add_argument("--batch", type=int, default=4)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--out-md", default=str(REPO / "benchmarks/results/extract_vs_hubert.md"))
    args = ap.parse_args()
    args.hubert_src = str(Path(args.hubert_src).resolve())
    args.deps = str(Path(args.deps).resolve()) if args.deps else None
    args.pins = str(Path(args.pins).resolve()) if args.pins else None
    info = machine_info()
    walls: dict[str, list[float]] = {s: [] for s in SIDES}
    with tempfile.TemporaryDirectory(prefix="rightsize-vs-hubert-") as tmp:
        t = Path(tmp)
        subprocess.run([sys.executable, "-c", WRITE_WEIGHTS, args.size, str(t / "weights"),
                        str(LAYER[args.size])], check=True)
        _params(t, min(args.records, 200), args.size, args.batch, "weights")
        demo = run_process(_rs("ecg-demo", "corpus", "--params", "params.yaml", "-q"), cwd=t)
        assert demo.rc == 0, demo.stderr
        if args.records > 200:
            _extend(t / "corpus" / "record_list.csv", args.records)
        detail: dict[str, dict] = {}
        for r in range(args.rounds):
            order = SIDES if r % 2 == 0 else SIDES[::-1]
            for side in order:
                wall, d = _theirs(t, args, r) if side == "hubert" else _ours(t, side, r)
                walls[side].append(wall)
                detail.setdefault(side, d)
                print(f"round {r} {side}: {wall:.1f} s", file=sys.stderr, flush=True)
        agree = json.loads(subprocess.run(
            [sys.executable, "-c", AGREEMENT, str(t / "ours_float32_0"),
             str(t / "hubert_0" / "latents")], check=True, capture_output=True,
            text=True).stdout.strip().splitlines()[-1])
    med = {s: statistics.median(walls[s]) for s in SIDES}
    auto = detail["auto"]["compute_dtype"]
    h = detail["hubert"]
    lines = [
        f"# rightsize extract against HuBERT-ECG's own path ({args.records:,} records, "
        f"HuBERT-ECG {args.size}, batch {args.batch})", "",
        "Machine: " + "; ".join(f"{k}: {v}" for k, v in info.items()), "",
        f"Whole processes, {args.rounds} round(s), sides alternated. HuBERT-ECG's path: their "
        f"`ecg_preprocessing` to .npy, then `dump_latent_features` (their ECGDataset, "
        f"DataLoader with 5 workers, per-record .npy; torch {h['threads']} threads); its "
        f"parts in round 0: imports {h['imports_s']:.1f} s, preprocessing "
        f"{h['preprocess_s']:.1f} s, model + dumping {h['dump_s']:.1f} s. Ours: "
        f"{detail['float32']['workers']} workers x {detail['float32']['threads_per_worker']} "
        f"thread, float16 parquet; `auto` resolved to {auto['dtype']} ({auto['why']}).", "",
        "| side | wall s (median) | runs | ratio to HuBERT-ECG's path |", "|---|---|---|---|"]
    names = {"hubert": "HuBERT-ECG's path (float32)", "float32": "rightsize extract, float32",
             "auto": f"rightsize extract, auto ({auto['dtype']})"}
    for s in SIDES:
        lines.append(f"| {names[s]} | {med[s]:.1f} | "
                     f"{', '.join(f'{w:.1f}' for w in walls[s])} | "
                     f"{med['hubert'] / med[s]:.2f}x |")
    check = detail["auto"].get("bf16_vs_float32")
    lines += ["", f"Our float32 tokens against theirs ({agree['records']:,} records, hidden "
              f"state {LAYER[args.size]}): relative RMS {agree['rel_rms']:.2e}, largest "
              f"|diff| {agree['max_abs']:.3g} (largest |value| {agree['ref_max_abs']:.3g}; "
              f"ours are stored in float16)."]
    if isinstance(check, dict):
        k = f"layer_{LAYER[args.size]}"
        lines.append(f"bf16 against float32 on the first batch, hidden state "
                     f"{LAYER[args.size]}: relative RMS {check[k]['rel_rms']:.2%}, largest "
                     f"|diff| {check[k]['max_abs']:.3g} (every hidden state: "
                     f"results/extract_dtype.md).")
    target = write_result(args.out_md, "\n".join(lines), "extract_vs_hubert.py", info)
    print(f"wrote {target}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
