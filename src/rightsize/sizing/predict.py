"""The ask's prediction for one extraction run on this machine's CPU, to set beside the run.

The run is modelled as ``extract`` executes it (:class:`RunShape`): ``workers`` processes
start at once, each paying its start-up (spawn, imports, model build), then take shards in
order as they come free; a worker reads, preprocesses, encodes and writes one shard after
the other on its own cores, so per record its parts add. The wall clock is the start-up plus
the last worker's finish (the shards' list schedule, so a short last shard or an odd shard
count shows) plus the workers' exit. Rates are the encoder bench's: the workers' own
records/s at the run's batch (``workers`` block of the bench), else the one-process rate at
that batch scaled to a worker's threads (labelled an assumption), the preprocessing rate per
core, and the disk rates the sizing stage measured. Both ends of the range use the measured
spreads.

:func:`check_bench_fits` refuses a bench of another model, size, geometry or batch (exit 4
naming both); :func:`compare` sets the measured run beside the prediction and names the
part that missed. No torch: numbers only.
"""

from __future__ import annotations

import heapq
from dataclasses import dataclass
from typing import Any

from rightsize.errors import DataError

#: The parts a run measures (``parts_wall_s`` of metrics/extract.json) and their names here.
RUN_PARTS = ("preprocessing", "compute", "writing")
STARTUP = "start-up and the rest"


@dataclass(frozen=True)
class RunShape:
    """How ``extract`` runs: workers, threads each, batch, model, shards (records each)."""

    workers: int
    threads_per_worker: int
    batch_size: int
    size: str
    crops_per_record: int
    depth: int                       # transformer layers the model runs (max of extract.layers)
    stored_layers: int               # hidden states written per record
    dtype_bytes: int
    shard_sizes: tuple[int, ...]
    device: str = "cpu"
    compute_dtype: str = "float32"   # resolved: the dtype the forwards run in

    @property
    def records(self) -> int:
        """Records this run extracts."""
        return sum(self.shard_sizes)


def check_bench_fits(bench: dict[str, Any], shape: RunShape, name: str) -> None:
    """``DataError`` (exit 4) naming the bench file and both sides when it measured another
    model, size, crop count, device, compute dtype or not the run's batch size."""
    want = f"HuBERT-ECG {shape.size}"
    if bench.get("family") != "hubert_ecg" or bench.get("size") != shape.size:
        raise DataError(f"{name}: the bench measured {bench.get('family')} "
                        f"{bench.get('size')}; this run extracts {want} (extract.size): "
                        f"pass the bench of the model extracted")
    crops = (bench.get("geometry") or {}).get("crops_per_record")
    if crops != shape.crops_per_record:
        raise DataError(f"{name}: the bench measured {crops} crop(s) per record; this run "
                        f"extracts {shape.crops_per_record} (extract.crops_per_record)")
    if bench.get("device") != shape.device:
        raise DataError(f"{name}: the bench ran on {bench.get('device')}; this run on "
                        f"{shape.device} (extract.device)")
    key = f"batch_{shape.batch_size}"
    measured = sorted(t["batch"] for t in (bench.get("throughput") or {}).values()
                      if isinstance(t, dict) and t.get("status", "ok") == "ok"
                      and isinstance(t.get("batch"), int))
    if key not in (bench.get("throughput") or {}) or shape.batch_size not in measured:
        raise DataError(f"{name}: the bench timed batch sizes {measured}; this run encodes "
                        f"batches of {shape.batch_size} (extract.batch_size): bench that batch "
                        f"(encoder_bench.models.<model>.batch_sizes)")
    measured_in = bench.get("compute_dtype", "float32")
    if measured_in != shape.compute_dtype:
        raise DataError(f"{name}: the bench computed in {measured_in}; this run computes in "
                        f"{shape.compute_dtype} (extract.compute_dtype resolved here): set "
                        f"encoder_bench.compute_dtype to match and bench again")


def _depth_scale(bench: dict[str, Any], depth: int) -> float:
    """The FLOP share of a model cut to ``depth`` of its layers (1 for the full model)."""
    layers = int((bench.get("architecture") or {}).get("layers") or depth)
    total, in_layers = bench.get("flops_per_input"), bench.get("flops_per_input_layers")
    if depth >= layers or not total or not in_layers:
        return 1.0
    return (total - in_layers * (1 - depth / layers)) / total


def _compute_per_record(bench: dict[str, Any], shape: RunShape) -> tuple[float, float, str]:
    """Seconds per record of one worker's forwards (fast end, slow end) and where from."""
    key = f"batch_{shape.batch_size}"
    scale = _depth_scale(bench, shape.depth)
    cut = "" if scale == 1.0 else f", x{scale:.2f} for {shape.depth} layers (FLOP share)"
    w = bench.get("workers") or {}
    t = (w.get("throughput") or {}).get(key)
    if t and w.get("threads_per_worker") == shape.threads_per_worker:
        mid = t["records_per_s_per_worker"]
        lo, hi = t.get("records_per_s_per_worker_min") or mid, \
            t.get("records_per_s_per_worker_max") or mid
        return (scale / hi, scale / lo,
                f"{mid:.3g} records/s per worker ({lo:.3g}-{hi:.3g}) at batch "
                f"{shape.batch_size}, {w['workers']} workers x {w['threads_per_worker']} "
                f"thread(s) measured together{cut}")
    one = bench["throughput"][key]
    threads = int((bench.get("hardware") or {}).get("threads") or 1)
    share = min(shape.threads_per_worker, threads) / threads
    mid = one["records_per_s"]
    lo, hi = one.get("records_per_s_min") or mid, one.get("records_per_s_max") or mid
    return (scale / (hi * share), scale / (lo * share),
            f"{mid:.3g} records/s of one process on {threads} threads at batch "
            f"{shape.batch_size}, x{share:.2g} for {shape.threads_per_worker} thread(s) per "
            f"worker (assumed linear in threads: the bench has no worker timing){cut}")


def finish(shards: tuple[int, ...], workers: int, per_record: float, start: float) -> float:
    """When the last worker finishes: shards taken in order by the first free worker."""
    free = [start] * max(1, min(workers, len(shards)))
    heapq.heapify(free)
    for n in shards:
        heapq.heappush(free, heapq.heappop(free) + n * per_record)
    return max(free)


def predict_cpu_run(bench: dict[str, Any], shape: RunShape, disk: dict[str, Any]
                    ) -> dict[str, Any]:
    """The predicted wall clock of ``shape`` on this machine's CPU (fast and slow end), and
    each part as the run measures it (worker seconds over the workers)."""
    n, w = shape.records, max(1, min(shape.workers, len(shape.shard_sizes)))
    c_lo, c_hi, c_note = _compute_per_record(bench, shape)
    pre = bench.get("preprocess") or {}
    p_mid = pre.get("records_per_s_per_core")
    read = disk.get("read") or {}
    in_bytes = pre.get("record_file_bytes") or 0
    r_s = in_bytes / read["bytes_per_s"] if read.get("bytes_per_s") and in_bytes else 0.0
    p_lo = 1 / (pre.get("records_per_s_per_core_max") or p_mid) + r_s if p_mid else r_s
    p_hi = 1 / (pre.get("records_per_s_per_core_min") or p_mid) + r_s if p_mid else r_s
    tokens = int(bench["tokens_per_record"])
    out_bytes = tokens * int(bench["hidden_size"]) * shape.stored_layers * shape.dtype_bytes
    w_s = out_bytes / disk["write"]["bytes_per_s"]
    wk = bench.get("workers") or {}
    s_lo, s_hi = wk.get("startup_s_min"), wk.get("startup_s_max")
    startup_known = s_lo is not None and s_hi is not None
    shutdown = wk.get("shutdown_s") or 0.0
    ends = {}
    for end, c, p, s in (("low", c_lo, p_lo, s_lo), ("high", c_hi, p_hi, s_hi)):
        per = c + p + w_s
        ends[end] = {"wall": finish(shape.shard_sizes, w, per, s or 0.0) + shutdown,
                     "compute": n * c / w, "preprocessing": n * p / w, "writing": n * w_s / w}
    parts: dict[str, Any] = {
        "compute": {"low_s": ends["low"]["compute"], "high_s": ends["high"]["compute"],
                    "how": "measured", "note": c_note},
        "preprocessing": {"low_s": ends["low"]["preprocessing"],
                          "high_s": ends["high"]["preprocessing"],
                          "how": "measured" if p_mid else "not measured",
                          "note": (f"{p_mid:.3g} records/s per core (page cache warm)"
                                   if p_mid else "not measured") +
                          (f" + reading {in_bytes / 1000:,.0f} kB per record at "
                           f"{read['bytes_per_s'] / 1e6:,.0f} MB/s" if r_s else "")},
        "writing": {"low_s": ends["low"]["writing"], "high_s": ends["high"]["writing"],
                    "how": "measured",
                    "note": f"{out_bytes / 1000:,.0f} kB per record at "
                            f"{disk['write']['bytes_per_s'] / 1e6:,.0f} MB/s"}}
    rest = {end: ends[end]["wall"] - sum(ends[end][k] for k in RUN_PARTS)
            for end in ("low", "high")}
    parts[STARTUP] = {
        "low_s": min(rest.values()), "high_s": max(rest.values()),
        "how": "measured" if startup_known else "not measured",
        "note": (f"start-up {s_lo:.1f}-{s_hi:.1f} s per worker ({wk.get('workers')} spawned at "
                 f"once) + workers idle at the end of the shard schedule + the workers' "
                 f"exit {shutdown:.2f} s"
                 if startup_known else "start-up not measured (the bench has no worker "
                                       "timing): idle at the end of the shard schedule only")}
    return {"records": n, "wall_s_low": ends["low"]["wall"], "wall_s_high": ends["high"]["wall"],
            "bound": max(RUN_PARTS, key=lambda k: ends["high"][k]), "parts": parts,
            "not_measured": [] if startup_known else ["start-up"],
            "run": {"workers": w, "threads_per_worker": shape.threads_per_worker,
                    "batch_size": shape.batch_size, "shards": len(shape.shard_sizes),
                    "largest_shard": max(shape.shard_sizes, default=0)},
            "model": "start-up + the last worker's finish + the workers' exit: shards in order "
                     "to the first free worker; per record compute + preprocessing + reading + "
                     "writing add on a worker's cores",
            "bench_size": bench.get("size"), "bench_batch": shape.batch_size,
            "bench_threads": (bench.get("hardware") or {}).get("threads"),
            "bench_machine": bench_host(bench)}


def bench_host(bench: dict[str, Any]) -> dict[str, Any]:
    """Whether the bench was measured on this host, and the machine in words."""
    stamp = bench.get("machine")
    try:
        from rightsize import machine

        if stamp is not None:
            return {"same": machine.same_machine(stamp), "words": machine.machine_phrase(stamp)}
    except (ImportError, AttributeError):
        pass
    from rightsize.measure import cpu_model

    cpu = (bench.get("hardware") or {}).get("cpu")
    same = None if cpu is None else cpu == cpu_model()
    words = ("an unrecorded machine" if cpu is None else
             f"{cpu} ({'this machine' if same else 'not this machine'}: by CPU model)")
    return {"same": same, "words": words}


def compare(prediction: dict[str, Any], wall_s: float,
            measured_parts: dict[str, float]) -> dict[str, Any]:
    """The measured wall clock against the predicted range: ratio to each end, whether it
    falls inside, and (outside) the part furthest outside its own predicted range, by how
    many seconds and what ratio to the range's nearer end."""
    lo, hi = prediction.get("wall_s_low"), prediction.get("wall_s_high")
    out: dict[str, Any] = {"wall_s": wall_s, "predicted_wall_s_low": lo,
                           "predicted_wall_s_high": hi, "parts_measured_s": measured_parts,
                           "bench_machine": prediction.get("bench_machine")}
    if not lo or not hi:
        return {**out, "inside": None, "ratio_to_high": None, "ratio_to_low": None,
                "mispredicted_part": None, "note": "no prediction (compute not measured)"}
    inside = lo <= wall_s <= hi
    out.update(inside=inside, ratio_to_high=wall_s / hi, ratio_to_low=wall_s / lo,
               ratio_to_mid=wall_s / ((lo + hi) / 2))
    parts = prediction.get("parts", {})
    miss: dict[str, tuple[float, float | None]] = {}
    for name, seconds in measured_parts.items():
        p = parts.get(name) or {}
        p_lo, p_hi = p.get("low_s") or 0.0, p.get("high_s") or 0.0
        near = p_hi if seconds > p_hi else p_lo if seconds < p_lo else None
        miss[name] = ((0.0, 1.0) if near is None else
                      (seconds - near, seconds / near if near > 0 else None))
    worst = max(miss, key=lambda k: abs(miss[k][0]), default=None)
    out["parts_outside_s"] = {k: v[0] for k, v in miss.items()}
    out["mispredicted_part"] = None if inside else worst
    out["mispredicted_excess_s"] = None if inside or worst is None else miss[worst][0]
    out["mispredicted_ratio"] = None if inside or worst is None else miss[worst][1]
    return out
