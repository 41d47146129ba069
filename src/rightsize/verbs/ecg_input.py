"""Verb: ecg-input (the float32 model input ``extract`` feeds HuBERT-ECG for one record).

Only the standard library and rightsize.errors/console/arglists are imported at module
level; the engines load inside the run function.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from rightsize import console
from rightsize.errors import DataError, InputError
from rightsize.verbs.arglists import add_params_when_present

EPILOG = """\
examples:
  rightsize ecg-input files/p1000/p10000032/s40689238/40689238 -o 40689238.npy
  rightsize ecg-input rec -o rec.npy --crops 2
  rightsize ecg-input rec -o rec.npy --params my.yaml     # its extract.crops_per_record

OUT.npy holds float32 (crops, 6000): crop c is seconds [5c, 5c + 5) at 500 Hz, 12 leads
flattened lead after lead and decimated x5, made by the function `rightsize extract` runs
(docs/extract.md). numpy.load(OUT.npy) reads it.

exit codes: 0 ok; 2 bad flag, params or an output that cannot be written; 4 a record that
cannot become a model input (unreadable, missing or duplicate lead, NaN, too short, rate
too low), named
"""


def register(sub: argparse._SubParsersAction, common: argparse.ArgumentParser) -> None:
    """Add ecg-input to the rightsize parser."""
    p = sub.add_parser(
        "ecg-input", parents=[common], epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
        help="one WFDB record's model input, as extract makes it",
        description="Read one WFDB record (path without extension), preprocess it with "
                    "HuBERT-ECG's recipe exactly as `rightsize extract` does and write the "
                    "float32 model input (crops, 6000) as .npy.")
    p.add_argument("record", help="WFDB record: the path of its .hea without the extension")
    p.add_argument("-o", "--out", required=True, help="the .npy file to write")
    p.add_argument("--crops", type=int, default=None,
                   help="crops of 5 s (default: extract.crops_per_record of --params, else 1)")
    add_params_when_present(p, "params file whose extract.crops_per_record sets the crops")
    p.set_defaults(func=run_ecg_input)


def _crops(args: argparse.Namespace) -> int:
    if args.crops is not None:
        if args.crops <= 0:
            raise InputError(f"--crops: must be a positive integer, got {args.crops}")
        return int(args.crops)
    if args.params is None:
        return 1
    from rightsize.extraction.config import ExtractConfig
    from rightsize.params import load_block

    cfg = load_block(args.params, "extract", ExtractConfig)
    cfg.validate("extract")
    return cfg.crops_per_record


def run_ecg_input(args: argparse.Namespace) -> int:
    """Preprocess the record and write its model input atomically."""
    from rightsize import atomic

    crops = _crops(args)
    atomic.check_writable(args.out)
    import numpy as np

    from rightsize.encoders.ecg_files import BadRecord
    from rightsize.encoders.preprocess import model_input
    from rightsize.extraction.worker import geometry_of_crops

    record = args.record[:-4] if args.record.endswith((".hea", ".dat")) else args.record
    try:
        x, fs = model_input(Path(record), geometry_of_crops(crops), record)
    except BadRecord as exc:
        raise DataError(str(exc)) from None
    with atomic.atomic_path(args.out) as tmp, open(tmp, "wb") as fh:
        np.save(fh, x)
    console.info(f"{args.out}: float32 {x.shape} model input of {record} ({fs:g} Hz stored)")
    return 0
