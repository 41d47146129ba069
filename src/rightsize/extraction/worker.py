"""One worker: the model built once, then shards read, preprocessed, encoded and written.

A shard's records are read and preprocessed in list order (:func:`~rightsize.encoders.
preprocess.model_input`, the function the encoder bench times and ``rightsize ecg-input``
writes), their crops stacked and encoded in batches of ``batch_size`` inputs that never
cross the shard, so a shard's
bytes depend on its records, the weights and the fingerprint only, never on which worker or
task ran it. Each batch logs ``extract/records_per_s`` and ``extract/batch_s`` to the
worker's event file (run ``<host>.rank<r>``), which ``rightsize telemetry`` reads.
"""

from __future__ import annotations

import socket
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from rightsize.encoders.ecg_files import BadRecord
from rightsize.encoders.models import EcgGeometry, conv_lengths
from rightsize.errors import DataError
from rightsize.extraction.config import ExtractConfig
from rightsize.extraction.record_list import RecordList, shard_rows
from rightsize.extraction.shards import ShardFile, write_shard


class StopOnBadRecord(Exception):
    """A bad record in a run without ``skip_bad``: the shard is not written."""

    def __init__(self, row: int, error: dict[str, str]) -> None:
        super().__init__(f"{error['record']}: {error['reason']}: {error['detail']}")
        self.row = row
        self.error = error

    def __reduce__(self) -> tuple[type, tuple[int, dict[str, str]]]:
        return (StopOnBadRecord, (self.row, self.error))      # crosses process boundaries


@dataclass
class WorkerState:
    """What a worker process keeps between shards."""

    cfg: ExtractConfig
    records: RecordList
    out: Path
    rank: int
    model: Any
    provenance: dict[str, Any]
    events: Any = None
    host: str = "localhost"
    step: int = 0
    bf16_check: dict[str, Any] | None = None   # the first batch in float32 and in computes_in
    computes_in: str = "float32"       # extract.compute_dtype resolved on this machine
    tokens: int = 93                   # tokens per crop of the input geometry
    on_inputs: Any = None              # progress: called with each batch's input count
    times: dict[str, float] = field(default_factory=lambda: {"read_preprocess_s": 0.0,
                                                              "compute_s": 0.0,
                                                              "write_s": 0.0})


def geometry_of_crops(crops: int) -> EcgGeometry:
    """The model input geometry ``extract`` uses: HuBERT-ECG's, ``crops`` crops a record."""
    return EcgGeometry(crops_per_record=crops)


def geometry_of(cfg: ExtractConfig) -> EcgGeometry:
    """The model input geometry ``extract`` uses (HuBERT-ECG's, ``crops_per_record`` crops)."""
    return geometry_of_crops(cfg.crops_per_record)


def start_worker(cfg: ExtractConfig, records: RecordList, out: Path, rank: int,
                 events_dir: Path | None) -> WorkerState:
    """Build the model (threads fixed at ``threads_per_worker``) and open the event file;
    ``times["startup_s"]`` is the seconds this took (imports, the readers and the model
    build)."""
    t_start = time.perf_counter()
    from rightsize.encoders.weights import build_extractor
    from rightsize.encoders.worker_process import prepare

    prepare(cfg.threads_per_worker)
    weights = Path(cfg.weights) if cfg.weights else None
    model, provenance = build_extractor(cfg.size, weights, cfg.seed, max(cfg.layers),
                                        geometry_of(cfg))
    model = model.to(_device(cfg.device))
    events = None
    host = socket.gethostname().split(".")[0] or "localhost"
    if events_dir is not None:
        from rightsize.ground.event_writer import EventWriter

        events = EventWriter(events_dir / f"{host}.rank{rank}", wall_time=time.time(),
                             host=host)
    state = WorkerState(cfg, records, out, rank, model, provenance, events, host,
                        tokens=conv_lengths(geometry_of(cfg).input_samples)[-1],
                        computes_in=cfg.computes_in)
    state.times["startup_s"] = time.perf_counter() - t_start
    return state


def _device(device: str) -> Any:
    """``extract.device`` as a torch device; ParamsError naming the key when this torch or
    this machine has no such device."""
    import torch

    from rightsize.errors import ParamsError

    if device.startswith("cuda"):
        if not torch.backends.cuda.is_built():
            raise ParamsError(f"extract.device: {device}, but this torch "
                              f"({torch.__version__}) is built without CUDA")
        index = int(device.split(":")[1]) if ":" in device else 0
        if index >= torch.cuda.device_count():
            raise ParamsError(f"extract.device: {device}, but {torch.cuda.device_count()} "
                              f"CUDA device(s) are visible")
    return torch.device(device)


def _check_finite(hidden: Any, stored: Any, stored_layers: tuple[int, ...], dtype: Any,
                  where: str) -> None:
    """DataError naming the first hidden state whose values the storage dtype cannot hold
    (NaN, inf, or beyond float16's range): the weights, not a record, are at fault."""
    import torch

    if all(np.isfinite(a).all() for a in stored):
        return
    limit = float(np.finfo(dtype).max)
    first = next((k for k, h in enumerate(hidden)
                  if not bool(torch.isfinite(h).all()) or float(h.float().abs().max()) > limit),
                 stored_layers[0])
    h = hidden[first].float()
    bad = int((~torch.isfinite(h) | (h.abs() > limit)).sum())
    after = "the embeddings output" if first == 0 else f"after transformer layer {first}"
    kept = ", ".join(str(k) for k in stored_layers)
    raise DataError(f"{where}: hidden state {first} ({after}) holds {bad} values that are NaN, "
                    f"inf or beyond {np.dtype(dtype).name}'s range ({limit:g}); stored layers "
                    f"{kept} would hold non-finite tokens: check the weights of that layer")


def _encode(state: WorkerState, inputs: np.ndarray, where: str = "shard") -> list[np.ndarray]:
    """Hidden states of the stored layers for ``inputs`` ``(n, samples)``: one
    ``(n, tokens, hidden)`` array per layer, in the storage dtype."""
    import torch

    from rightsize.encoders.compute_dtype import autocast, difference

    cfg = state.cfg
    dtype = np.float16 if cfg.dtype == "float16" else np.float32
    out: list[list[np.ndarray]] = [[] for _ in cfg.stored_layers]
    for start in range(0, len(inputs), cfg.batch_size):
        t0 = time.perf_counter()
        batch = torch.from_numpy(inputs[start:start + cfg.batch_size]).to(cfg.device)
        if state.computes_in != "float32" and state.rank == 0 and state.bf16_check is None:
            state.bf16_check = difference(state.model, batch, tuple(range(max(cfg.layers) + 1)),
                                          cfg.device, state.computes_in)
            t0 = time.perf_counter()
        with torch.inference_mode(), autocast(state.computes_in, cfg.device):
            hidden = state.model(batch, output_hidden_states=True).hidden_states
        stored = [hidden[layer].float().cpu().numpy().astype(dtype)
                  for layer in cfg.stored_layers]
        _check_finite(hidden, stored, cfg.stored_layers, dtype, where)
        for j, values in enumerate(stored):
            if values.shape[1] != state.tokens:
                raise DataError(f"{where}: the model gives {values.shape[1]} tokens per crop, "
                                f"the input geometry {state.tokens}: check its config's "
                                f"conv_kernel and conv_stride")
            out[j].append(values)
        seconds = time.perf_counter() - t0
        state.times["compute_s"] += seconds
        if state.on_inputs is not None:
            state.on_inputs(len(batch))
        if state.events is not None:
            state.step += 1
            now = time.time()
            per_record = len(batch) / cfg.crops_per_record
            state.events.add_scalar("extract/batch_s", seconds, state.step, now)
            state.events.add_scalar("extract/records_per_s", per_record / seconds,
                                    state.step, now)
    return [np.concatenate(parts) for parts in out]


def run_shard(state: WorkerState, shard: int) -> ShardFile:
    """Read, preprocess, encode and write ``shard``; raises :class:`StopOnBadRecord` on the
    first bad record unless ``skip_bad`` (then its errors are kept in the shard's record)."""
    from rightsize.encoders.preprocess import model_input
    from rightsize.extraction.inputs import record_inputs

    cfg, records = state.cfg, state.records
    geometry = geometry_of(cfg)
    t0 = time.perf_counter()
    rows, inputs, errors, stored_fs, made_from = [], [], [], [], []
    for row in shard_rows(shard, len(records), cfg.shard_records):
        name = records.path[row]
        made_from.append(record_inputs(records, row))       # before reading: never newer
        try:
            x, fs = model_input(records.file(row), geometry, name)
            inputs.append(x)
        except BadRecord as bad:
            error = {"study_id": records.study_id[row], "subject_id": records.subject_id[row],
                     "path": name, "reason": bad.reason, "detail": bad.detail,
                     "record": name}
            if not cfg.skip_bad:
                raise StopOnBadRecord(row, error) from None
            errors.append(error)
            continue
        rows.append(row)
        stored_fs.append(fs)
    state.times["read_preprocess_s"] += time.perf_counter() - t0
    if errors and state.on_inputs is not None:     # bad records count as done for progress
        state.on_inputs(len(errors) * cfg.crops_per_record)
    if inputs:
        layers = _encode(state, np.concatenate(inputs),       # (records x crops, samples)
                         f"shard {shard} (list rows {rows[0] + 1}-{rows[-1] + 1})")
    else:                                                      # every record was bad
        shape = (0, state.tokens, state.model.config.hidden_size)
        layers = [np.zeros(shape, np.float16 if cfg.dtype == "float16" else np.float32)
                  for _ in cfg.stored_layers]
    t1 = time.perf_counter()
    crops = cfg.crops_per_record
    per_record = [a.reshape(len(rows), crops * a.shape[1], a.shape[2]) for a in layers]
    written = write_shard(state.out, shard, cfg, records, rows, per_record, errors,
                          stored_fs, state.provenance, made_from)
    state.times["write_s"] += time.perf_counter() - t1
    if state.events is not None:
        state.events.flush()
    return written
