"""Words for a sizing result: the answer, the one-line ask, tables and notes, stored in its JSON.

:func:`describe` turns the numbers :func:`rightsize.sizing.plan.size_all` computed into the
text a person reads (``result["text"]``), so the CLI and the report, which reads metrics
files only, show the same sentences. Every figure says where it came from: measured (and
on what), extrapolated, or estimated (and how); every count says its source.
"""

from __future__ import annotations

from typing import Any

from rightsize.fmt import compact_bytes, compact_range, duration_range
from rightsize.machine import machine_phrase, stamp
from rightsize.sizing.ask_words import UNITS, ask_sentence
from rightsize.sizing.geometry_words import geometry_notes


def bound_text(job: dict[str, Any]) -> str:
    """The bound in plain words, then the parts with no time (``unknown: echo decoding``)."""
    from rightsize.sizing.timing import bound_words

    text = bound_words(job) if "bound_low" in job else (job.get("bound") or "not determined")
    if job.get("unknown"):
        text += f"; unknown: {', '.join(job['unknown'])}"
    return text


def _cheapest_cell(row: dict[str, Any], deadline_h: float) -> str:
    c = row["cheapest"]
    opt = c["option"]
    if c["choice"] == "no_fit":
        return "request scratch first: the shards do not fit the disk"
    if c["choice"] == "cpu":
        return f"CPU: {duration_range(opt['wall_s_low'], opt['wall_s_high'])}"
    if c["choice"] in ("gpu", "unknown"):
        where = "CPU" if c["k"] is None else f"{c['k']} GPU{'s' if c['k'] != 1 else ''}"
        text = f"{where}: {duration_range(opt['wall_s_low'], opt['wall_s_high'])}"
        if c["k"] is not None:
            text += f", {compact_range(opt['gpu_hours_low'], opt['gpu_hours_high'])} GPU-h"
        if c["choice"] == "unknown":
            text += f" without the unknown {', '.join(opt.get('unknown') or [])}"
        return text
    return f"none within {deadline_h:g} h"


def scenario_table(result: dict[str, Any]) -> dict[str, Any]:
    """One row per scenario and model: records with source, CPU, K GPUs, cheapest, bytes."""
    k = result["gpus"]
    rows = []
    for name, sc in result["scenarios"].items():
        for model, r in sc["models"].items():
            cpu, gpu = r["cpu"], r["gpu"]
            fits = "" if sc.get("fits_free_space") in (None, True) else ", over the free space"
            rows.append([
                f"{name} / {model}",
                f"{r['records']:,} {UNITS.get(r['family'], 'records')} ({r['source']}"
                + (f"; assumption: {r['assumption']})" if r.get("assumption") else ")"),
                f"{duration_range(cpu['wall_s_low'], cpu['wall_s_high'])} "
                f"({cpu['parts']['compute']['how']}), bound by {bound_text(cpu)}",
                f"{duration_range(gpu['wall_s_low'], gpu['wall_s_high'])}, "
                f"{compact_range(gpu['gpu_hours_low'], gpu['gpu_hours_high'])} GPU-h "
                f"({gpu['parts']['compute']['how']}), bound by {bound_text(gpu)}",
                _cheapest_cell(r, result["deadline_h"]),
                f"{compact_bytes(r['storage_bytes'])} ({r['layers_kept']} x "
                f"{compact_bytes(r['storage_bytes_per_layer'])}{fits})",
                compact_bytes(r["manifest_bytes"]),
            ])
    header = ["scenario / model", "records (source)",
              _cpu_header(result),
              f"{k} GPUs ({result['cpu_cores_per_gpu']} CPU cores per GPU)",
              f"cheapest within {result['deadline_h']:g} h / {result.get('margin', 1):g} "
              f"that fits",
              f"shards ({_dtype(result)}: layers x per layer)", "probe manifest (float32)"]
    return {"header": header, "rows": rows,
            "caption": "Wall-clock per scenario; the bound is the slowest of compute, "
                       "preprocessing, reading and writing. GPU-h = GPUs x wall-clock."}


def _dtype(result: dict[str, Any]) -> str:
    return next((r["dtype"] for sc in result["scenarios"].values()
                 for r in sc["models"].values()), "float16")


def layers_table(result: dict[str, Any]) -> dict[str, Any]:
    """Per model: which hidden states are kept and the bytes per layer and per record."""
    seen: dict[str, dict[str, Any]] = {}
    for sc in result["scenarios"].values():
        for model, r in sc["models"].items():
            seen.setdefault(model, r)
    rows = []
    for model, r in seen.items():
        first, last = r["layers"][0], r["layers"][-1]
        states = f"hidden state {first}" if first == last else f"hidden states {first}-{last}"
        what = ("tokens" if r["keep"] == "tokens" else "a mean-pooled vector per "
                + ("crop" if r["family"] == "hubert_ecg" else "clip"))
        vectors = r["tokens_per_record"] if r["keep"] == "tokens" else r["inputs_per_record"]
        rows.append([model, f"{what} of {states} (the last {r['layers_kept']} of "
                            f"{r['hidden_states']}, embeddings output = 0)",
                     f"{compact_bytes(r['bytes_per_record_per_layer'])} ({vectors:,} x "
                     f"{r['hidden_size']:,} x {r['dtype']})",
                     compact_bytes(r["bytes_per_record"])])
    return {"header": ["model", "kept (sizing.models)", "per layer per record",
                       "per record"], "rows": rows,
            "caption": "A probe manifest built from the shards holds the same values as "
                       "float32 (what `cohort` writes): twice the float16 bytes."}


def bench_table(result: dict[str, Any]) -> dict[str, Any]:
    """What each encoder bench measured and where."""
    rows = []
    for m, b in result["benches"].items():
        rate = "-" if b.get("records_per_s") is None else f"{b['records_per_s']:.3g}"
        if b.get("timing_extrapolated"):
            rate += " (extrapolated)"
        pre = b.get("preprocess_records_per_s_per_core")
        rows.append([m, f"{b['family']} {b['size']}",
                     f"{b.get('tokens_per_input') or 0:,} x {b.get('inputs_per_record') or 0}"
                     f" = {b['tokens_per_record']:,}",
                     f"{b['flops_per_record'] / 1e9:,.1f} GFLOP", f"{rate} at batch "
                     f"{b.get('best_batch')}", "-" if pre is None else f"{pre:,.3g}",
                     f"{b['measured_on']} ({b['device']})"])
    return {"header": ["model", "encoder", "tokens per input x inputs = per record",
                       "FLOPs/record", "records/s", "preprocess records/s/core",
                       "measured on"], "rows": rows,
            "caption": "From metrics/encoders/<model>.json (random weights, shapes from the "
                       "model's real output)."}


def gpu_type_table(result: dict[str, Any]) -> dict[str, Any] | None:
    """The ask's job on each GPU type: wall-clock and GPU-hours per k, the fewest GPUs
    within the deadline with its margin, and money when sizing.prices has that type."""
    types = result.get("gpu_types") or []
    if not types:
        return None
    ks = list(types[0]["by_k"])
    rows = []
    for t in types:
        cells = [f"{t['type']} ({t['bf16_dense_tflops']:g} TF bf16 dense, {t['memory_gb']} GB; "
                 f"{t['compute']})"]
        for k in ks:
            j = t["by_k"][k]
            cells.append(f"{duration_range(j['wall_s_low'], j['wall_s_high'])}, "
                         f"{compact_range(j['gpu_hours_low'], j['gpu_hours_high'])} GPU-h")
        pick = (f"{t['k']} GPU{'s' if t['k'] != 1 else ''}" if t["k"] else
                "request scratch first: the shards do not fit the disk"
                if t["choice"] == "no_fit" else
                f"none within {result['deadline_h']:g} h / {result.get('margin', 1):g}")
        if t["choice"] == "unknown" and t["k"]:
            pick += " (unknown parts)"
        if t.get("cost"):
            pick += f"; {compact_range(t['cost']['low'], t['cost']['high'])} at your price"
        cells.append(pick)
        rows.append(cells)
    a = result["ask"]
    heads = [f"{k} GPU{'s' if k != '1' else ''}" for k in ks]
    return {"header": ["GPU type (peak, memory; compute)", *heads, "fewest within the deadline"],
            "rows": rows,
            "caption": f"The ask ({a['scenario']}: {', '.join(a['models'])}) on each GPU type "
                       f"(sizing.gpu_types): wall-clock and GPU-hours; compute measured where a "
                       f"committed GPU file of that type matches, else estimated from the "
                       f"measured FLOPs at sizing.estimate.utilisation of the type's published "
                       f"dense bf16 peak. Sources: "
                       + "; ".join(f"{t['type']}: {t['source']}" for t in types) + "."
                       + (f" {result['gpu_types_bound']}" if result.get("gpu_types_bound")
                          else "")}


def request_table(result: dict[str, Any]) -> dict[str, Any] | None:
    """Per scenario the Slurm request to paste (:mod:`rightsize.sizing.request`)."""
    reqs = result.get("requests") or {}
    if not reqs:
        return None
    rows = [[name, "; ".join(line.removeprefix("#SBATCH ") for line in r["lines"]) or "-",
             r["scratch"], r["why"]]
            for name, r in reqs.items()]
    return {"header": ["scenario", "#SBATCH lines", "scratch", "why"], "rows": rows,
            "caption": f"Each scenario's request, models one after another: --time is the slow "
                       f"end times sizing.margin ({result.get('margin', 1):g}x); --mem the "
                       f"measured peak memory times the margin; scratch against the free "
                       f"space measured at sizing.disk.path ({result['disk']['path']})."}


def _crops(n: int | None) -> str:
    return f"{n} crop{'s' if n != 1 else ''}" if n else "crops not recorded"


def before_after_table(result: dict[str, Any]) -> dict[str, Any] | None:
    """The retired calculator's job, its asserted figures beside the measured ones."""
    ba = result.get("asserted_vs_measured", {})
    if "measured" not in ba:
        return None
    old, new = ba["asserted"], ba["measured"]
    est = "" if new["gpu_measured"] else " (estimated from measured FLOPs)"
    return {"header": ["figure", "asserted before (retired params)", "measured now"],
            "rows": [["tokens per record", f"{old['tokens_per_record']:,}",
                      f"{new['tokens_per_record']:,} ({new['model']} {new['size']}, "
                      f"{_crops(new.get('crops_per_record'))}, output shapes)"],
                     ["storage", compact_bytes(old["storage_bytes"]),
                      compact_bytes(new["storage_bytes"])],
                     ["GPU-hours (compute)", compact_range(old["gpu_hours"]),
                      compact_range(new["gpu_hours_low"], new["gpu_hours_high"]) + est],
                     ["writing the shards (one node)", "not counted",
                      f"{duration_range(new['write_s'])} at "
                      f"{new['write_bytes_per_s'] / 1e6:,.0f} MB/s (aggregate, measured here)"],
                     ["GPU-hours on 1 GPU with the write bound",
                      compact_range(old["gpu_hours"]) + " (no write bound)",
                      compact_range(new["gpu_hours_with_write_low"],
                                   new["gpu_hours_with_write_high"]) + est]],
            "caption": f"The retired calculator's job: {ba['records']:,} ECG records, "
                       f"{ba['layers_kept']} layers, {ba['dtype']}; the asserted side "
                       f"multiplied 50 tokens/s and 40 records/s per GPU."}


def _cpu_header(result: dict[str, Any]) -> str:
    """``this machine's CPU (2 cores)``, or the other machine the CPU benches ran on."""
    benches = result["benches"].values()
    cores = f"{result['hardware']['cores']} cores"
    if all(b.get("this_machine") for b in benches):
        return f"this machine's CPU ({cores})"
    return f"the benches' CPU ({cores}; maybe not this machine's: see the notes)"


def _elsewhere_note(result: dict[str, Any]) -> list[str]:
    """A note when a CPU bench came from another machine (or one with no stamp)."""
    others = {m: b for m, b in result["benches"].items() if not b.get("this_machine")}
    if not others:
        return []
    where = "; ".join(f"{m} on {b['measured_on']}" for m, b in others.items())
    return [f"The CPU figures of {', '.join(others)} come from benches measured elsewhere "
            f"({where}), not on this machine ({stamp()['words']}): run `dvc repro` (or "
            f"`rightsize bench-encoder`) here to measure this CPU."]


def _cpu_dtypes(result: dict[str, Any]) -> str:
    """The dtype the CPU benches computed in (what the CPU column's rates assume): one word
    when they agree, else each model's."""
    cpu = {m: b.get("compute_dtype", "float32") for m, b in result["benches"].items()
           if b.get("device") == "cpu"}
    if len(set(cpu.values())) == 1:
        return f"in {next(iter(cpu.values()))}, as the benches ran"
    return "; ".join(f"{m} in {d}" for m, d in cpu.items()) or "no CPU bench"


def notes(result: dict[str, Any]) -> list[str]:
    """What a person needs beside the numbers: rules, caveats, where each rate came from."""
    hw, est, disk = result["hardware"], result["estimate"], result["disk"]
    w, r = disk["write"], disk.get("read")
    out = [
        f"Cheapest first: this machine's CPU when it finishes within sizing.deadline_h "
        f"({result['deadline_h']:g} h) divided by sizing.margin ({result.get('margin', 1):g}x), "
        f"else the fewest GPUs that do (the fewest GPU-hours); estimate ranges are checked "
        f"at their slow end. An option qualifies only when every part of it was timed (a "
        f"part with no time is said: unknown) and the shards fit the free space and quota.",
        f"This machine's CPU: the encoder rate at its best measured batch with all "
        f"{hw['cores']} threads ({_cpu_dtypes(result)}), preprocessing on the same cores "
        f"(the times add), reading and writing overlapping. On k GPUs: compute over k GPUs, "
        f"preprocessing over {result['cpu_cores_per_gpu']} CPU cores per GPU at the per-core "
        f"rate measured on this CPU, reading and writing at the rates measured here, all "
        f"overlapping.",
    ]
    if hw.get("gpu_measured"):
        out.append(f"GPU figures measured on {hw['gpu']} (see the GPU files below) in the "
                   f"dtype its file names; float32 would run several times slower.")
    else:
        out.append(f"The GPU estimate assumes bf16 tensor cores: {est['peak_tflops']:g} "
                   f"TFLOP/s is {est['gpu']}'s published dense bf16 peak (the preset named by "
                   f"sizing.estimate.gpu; every type: the GPU-type table). In float32 the same "
                   f"forward runs several times slower; run the re-extraction in bf16 or "
                   f"fp16, or multiply the GPU time accordingly.")
    read = ("" if r is None else
            f"; reading {r['bytes_per_s'] / 1e6:,.0f} MB/s over {r['files']} files of "
            f"{r['file_bytes'] / 1000:,.0f} kB, page cache {r['page_cache']}")
    out.append(f"Disk measured at {disk['path']} on {machine_phrase(stamp())}: writing "
               f"{w['bytes_per_s'] / 1e6:,.0f} MB/s ({w['shards']} {w['format']} shards of "
               f"{w['shard_bytes'] / 1e6:,.0f} MB of float16 token states, each fsync'd: the "
               f"aggregate over the whole sample, which the write bound uses; single shards "
               f"ran {w['bytes_per_s_shard_min'] / 1e6:,.0f}-"
               f"{w['bytes_per_s_shard_max'] / 1e6:,.0f} MB/s){read}. This is *this* "
               f"machine's path: the target machine's disk must be measured there (run "
               f"`rightsize sizing` on it).")
    out += geometry_notes(result["benches"])
    out = _elsewhere_note(result) + out
    files = result.get("gpu_files") or []
    out.append("GPU files (measurements/gpu): " + ("; ".join(
        f"{f['file']}: {f['status']}" for f in files) if files else
        "none committed, so GPU compute is estimated") + ".")
    if result.get("prices"):
        p = result["prices"]
        out.append(f"Money uses the user's prices (sizing.prices: gpu_hour "
                   f"{p['gpu_hour'] if p['gpu_hour'] is not None else 'not set'}, "
                   f"cpu_core_hour "
                   f"{p['cpu_core_hour'] if p['cpu_core_hour'] is not None else 'not set'}); "
                   f"they are not measured.")
    return out


def describe(result: dict[str, Any]) -> dict[str, Any]:
    """The words for ``result``: answer, ask sentence, tables (in order) and notes."""
    answer, sentence = ask_sentence(result)
    tables = [scenario_table(result), layers_table(result), bench_table(result)]
    for extra in (request_table(result), gpu_type_table(result), before_after_table(result)):
        if extra is not None:
            tables.append(extra)
    return {"answer": answer, "ask": sentence, "tables": tables, "notes": notes(result)}


def table_rows(result: dict[str, Any]) -> list[tuple[str, str]]:
    """(label, value) rows for the CLI: the ask, one row per scenario and model, the disk."""
    text = result["text"]
    rows: list[tuple[str, str]] = [("ask", text["ask"])]
    scen = text["tables"][0]
    for cells in scen["rows"]:
        rows.append((cells[0], "; ".join(f"{h}: {c}" for h, c in
                                         zip(scen["header"][1:], cells[1:], strict=True))))
    for sentence in text.get("pilot") or []:
        rows.append(("pilot", sentence))
    rows += [("note", n) for n in text["notes"]]
    return rows


def request_text(result: dict[str, Any]) -> str:
    """Every scenario's Slurm request as lines to paste (the pilot's where there is one)."""
    out = []
    pilot = result.get("pilot") or {}
    for name, r in (result.get("requests") or {}).items():
        if not r["lines"]:
            continue
        out.append(f"# {name}: {r['why']}; memory from {r.get('mem_how', '?')}")
        out += r["lines"]
        out.append(f"# scratch: {r['scratch']}")
        p = (pilot.get("requests") or {}).get(name)
        if p and p["lines"]:
            out.append(f"# {name} from the pilot ({pilot['records']} records on "
                       f"{pilot['machine']}): {p['why']}")
            out += p["lines"]
        out.append("")
    return "\n".join(out) + ("\n" if out else "")
