"""Words for a sizing result: the answer, the one-line ask, tables and notes, stored in its JSON.

:func:`describe` turns the numbers :func:`rightsize.sizing.plan.size_all` computed into the
text a person reads (``result["text"]``), so the CLI and the report, which reads metrics
files only, show the same sentences. Every figure says where it came from: measured (and
on what), extrapolated, or estimated (and how); every count says its source.
"""

from __future__ import annotations

from typing import Any

from rightsize.sizing.units import format_bytes, format_duration, format_hours

UNITS = {"hubert_ecg": "ECG records", "echojepa": "videos"}
EXPECTED_VIDEO = {"frames": 16, "resolution": 224, "clips_per_record": 2}
ECHOJEPA_SOURCE = "bowang-lab/EchoJEPA configs/eval/vitl/echojepa_lvef.yaml"
HUBERT_SOURCE = "Edoar-do/HuBERT-ECG code/utils.py (ecg_preprocessing) and code/dataset.py"


def _yes_no(v: bool | None) -> str:
    return "-" if v is None else ("yes" if v else "NO")


def _how(parts: list[dict[str, Any]]) -> str:
    """measured / extrapolated / estimated for a set of compute parts (the weakest wins)."""
    hows = {p["how"] for p in parts}
    for word in ("not measured", "estimated", "extrapolated"):
        if word in hows:
            return word
    return "measured"


def bound_text(job: dict[str, Any]) -> str:
    """The bound in words, with the parts that were not measured."""
    from rightsize.sizing.timing import bound_words

    return bound_words(job) if "bound_low" in job else (job.get("bound") or "not determined")


def _records(result: dict[str, Any], scenario: str, models: list[str]) -> str:
    rows = result["scenarios"][scenario]["models"]
    return "; ".join(f"{m} {rows[m]['records']:,} {UNITS.get(rows[m]['family'], 'records')}, "
                     f"source: {rows[m]['source']}" for m in models)


def _fits(result: dict[str, Any], block: dict[str, Any]) -> str:
    disk, out = result["disk"], []
    if block.get("fits_free_space") is not None:
        out.append(f"fits the {format_bytes(disk['free_bytes'])} free at {disk['path']}: "
                   f"{_yes_no(block['fits_free_space'])}")
    if block.get("fits_quota") is not None:
        out.append(f"the {format_bytes(disk['quota_bytes'])} quota: "
                   f"{_yes_no(block['fits_quota'])}")
    return "; ".join(out) or "no disk check"


def _gpu_words(result: dict[str, Any], k: int, how: str) -> str:
    hw = result["hardware"]
    return (f"{k} GPU{'s' if k != 1 else ''} ({hw['gpu']}, {how}; "
            f"{result['cpu_cores_per_gpu']} CPU cores per GPU)")


def _cost(c: dict[str, Any] | None) -> str:
    if not c:
        return ""
    span = format_hours(c["low"], c["high"])
    return f"; at your prices (sizing.prices, not measured): {span} ({c['what']})"


def ask_sentence(result: dict[str, Any]) -> tuple[str, str]:
    """(short answer, sentence): the cheapest option within the deadline, then the rest."""
    a, hw = result["ask"], result["hardware"]
    rows = result["scenarios"][a["scenario"]]["models"]
    models = a["models"]
    cpu_how = _how([rows[m]["cpu"]["parts"]["compute"] for m in models])
    gpu_how = _how([rows[m]["gpu"]["parts"]["compute"] for m in models])
    dtype = rows[models[0]]["dtype"]
    tail = (f"({a['scenario']}: {_records(result, a['scenario'], models)}; deadline "
            f"{result['deadline_h']:g} h; {_fits(result, a)})")
    shards = f"{format_bytes(a['storage_bytes'])} of {dtype} shards"
    cpu, opt = a["cpu"], a["option"]
    cores = f"{hw['cores']} core{'s' if hw['cores'] != 1 else ''}"
    cpu_words = f"this machine's {cores} ({hw['cpu']}, {cpu_how})"
    if a["choice"] == "cpu":
        return ("No GPU needed",
                f"No GPU needed: {format_duration(cpu['wall_s_low'], cpu['wall_s_high'])} on "
                f"{cpu_words}, {shards}, bound by {cpu['bound']}{_cost(a['cost'])} {tail}.")
    gpu_span = format_hours(opt["gpu_hours_low"], opt["gpu_hours_high"]) if opt else "-"
    cpu_took = ("not measured" if cpu["wall_s_high"] is None
                else format_duration(cpu["wall_s_low"], cpu["wall_s_high"]))
    if a["choice"] == "gpu":
        k = a["gpus_chosen"]
        return (f"{k} GPU{'s' if k != 1 else ''}, {gpu_span} GPU-hours",
                f"{_gpu_words(result, k, gpu_how)}: "
                f"{format_duration(opt['wall_s_low'], opt['wall_s_high'])} wall-clock, "
                f"{gpu_span} GPU-hours, {shards}, bound by {opt['bound']}{_cost(a['cost'])}; "
                f"{cpu_words} would take {cpu_took}, over the deadline {tail}.")
    fastest = a["gpu"]
    return ("Over the deadline",
            f"Nothing configured finishes within the {result['deadline_h']:g} h deadline: "
            f"{cpu_words} take {cpu_took}; "
            f"{_gpu_words(result, result['gpus'], gpu_how)} take "
            f"{format_duration(fastest['wall_s_low'], fastest['wall_s_high'])} "
            f"({format_hours(fastest['gpu_hours_low'], fastest['gpu_hours_high'])} "
            f"GPU-hours), bound by {fastest['bound']}; {shards} {tail}.")


def _cheapest_cell(row: dict[str, Any], deadline_h: float) -> str:
    c = row["cheapest"]
    opt = c["option"]
    if c["choice"] == "cpu":
        return f"CPU: {format_duration(opt['wall_s_low'], opt['wall_s_high'])}"
    if c["choice"] == "gpu":
        return (f"{c['k']} GPU{'s' if c['k'] != 1 else ''}: "
                f"{format_duration(opt['wall_s_low'], opt['wall_s_high'])}, "
                f"{format_hours(opt['gpu_hours_low'], opt['gpu_hours_high'])} GPU-h")
    return f"none within {deadline_h:g} h"


def scenario_table(result: dict[str, Any]) -> dict[str, Any]:
    """One row per scenario and model: records with source, CPU, K GPUs, cheapest, bytes."""
    hw, k = result["hardware"], result["gpus"]
    rows = []
    for name, sc in result["scenarios"].items():
        for model, r in sc["models"].items():
            cpu, gpu = r["cpu"], r["gpu"]
            fits = "" if sc.get("fits_free_space") in (None, True) else ", over the free space"
            rows.append([
                f"{name} / {model}",
                f"{r['records']:,} {UNITS.get(r['family'], 'records')} ({r['source']})",
                f"{format_duration(cpu['wall_s_low'], cpu['wall_s_high'])} "
                f"({cpu['parts']['compute']['how']}), bound by {bound_text(cpu)}",
                f"{format_duration(gpu['wall_s_low'], gpu['wall_s_high'])}, "
                f"{format_hours(gpu['gpu_hours_low'], gpu['gpu_hours_high'])} GPU-h "
                f"({gpu['parts']['compute']['how']}), bound by {bound_text(gpu)}",
                _cheapest_cell(r, result["deadline_h"]),
                f"{format_bytes(r['storage_bytes'])} ({r['layers_kept']} x "
                f"{format_bytes(r['storage_bytes_per_layer'])}{fits})",
                format_bytes(r["manifest_bytes"]),
            ])
    header = ["scenario / model", "records (source)",
              f"this machine's CPU ({hw['cores']} cores)",
              f"{k} GPUs ({result['cpu_cores_per_gpu']} CPU cores per GPU)",
              f"cheapest within {result['deadline_h']:g} h",
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
                     f"{format_bytes(r['bytes_per_record_per_layer'])} ({vectors:,} x "
                     f"{r['hidden_size']:,} x {r['dtype']})",
                     format_bytes(r["bytes_per_record"])])
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
                     f"{b.get('best_batch')}", "-" if pre is None else f"{pre:,.0f}",
                     f"{b['measured_on']} ({b['device']})"])
    return {"header": ["model", "encoder", "tokens per input x inputs = per record",
                       "FLOPs/record", "records/s", "preprocess records/s/core",
                       "measured on"], "rows": rows,
            "caption": "From metrics/encoders/<model>.json (random weights, shapes from the "
                       "model's real output)."}


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
                     ["storage", format_bytes(old["storage_bytes"]),
                      format_bytes(new["storage_bytes"])],
                     ["GPU-hours", format_hours(old["gpu_hours"]),
                      format_hours(new["gpu_hours_low"], new["gpu_hours_high"]) + est]],
            "caption": f"The retired calculator's job: {ba['records']:,} ECG records, "
                       f"{ba['layers_kept']} layers, {ba['dtype']}; the asserted side "
                       f"multiplied 50 tokens/s and 40 records/s per GPU."}


def _geometry_notes(result: dict[str, Any]) -> list[str]:
    out = []
    for m, b in result["benches"].items():
        g = b.get("geometry") or {}
        if b["family"] == "hubert_ecg":
            n = g.get("crops_per_record", b.get("inputs_per_record"))
            which = ("the first 5 s of each 10-s record, the window HuBERT-ECG's embedding-dump "
                     "path keeps (encode=True); crops_per_record: 2 sizes the whole record"
                     if n == 1 else
                     "the whole 10-s record; crops_per_record: 1 sizes the first 5 s, the "
                     "window HuBERT-ECG's embedding-dump path keeps")
            out.append(f"{m}: sized at {n} crop{'s' if n != 1 else ''} of 5 s per record, "
                       f"{b.get('tokens_per_input')} tokens each: {which}. Preprocessing "
                       f"band-passes, scales each lead to [-1, 1], crops, flattens the 12 "
                       f"leads, then decimates, as {HUBERT_SOURCE} do; rightsize extract "
                       f"runs the same function.")
        elif b["family"] == "echojepa":
            published = all(g.get(k) == v for k, v in EXPECTED_VIDEO.items())
            geo = (f"{g.get('frames')} frames at {g.get('resolution')} px, tubelet "
                   f"{g.get('tubelet', 2)}, patch {g.get('patch', 16)}: "
                   f"{b.get('tokens_per_input'):,} tokens per clip (the model's output), "
                   f"{g.get('clips_per_record')} clips per video")
            out.append(f"{m}: {geo}; " + (f"EchoJEPA's published ViT-L evaluation geometry "
                                          f"({ECHOJEPA_SOURCE})." if published else
                                          f"not EchoJEPA's published evaluation geometry "
                                          f"(224 px, 16 frames, 2 clips: {ECHOJEPA_SOURCE})."))
    return out


def notes(result: dict[str, Any]) -> list[str]:
    """What a person needs beside the numbers: rules, caveats, where each rate came from."""
    hw, est, disk = result["hardware"], result["estimate"], result["disk"]
    w, r = disk["write"], disk.get("read")
    out = [
        f"Cheapest first: this machine's CPU when it finishes within sizing.deadline_h "
        f"({result['deadline_h']:g} h), else the fewest GPUs that do (the fewest GPU-hours); "
        f"estimate ranges are checked at their slow end.",
        f"This machine's CPU: the encoder rate at its best measured batch with all "
        f"{hw['cores']} threads (float32), preprocessing on the same cores (the times add), "
        f"reading and writing overlapping. On k GPUs: compute over k GPUs, preprocessing over "
        f"{result['cpu_cores_per_gpu']} CPU cores per GPU at the per-core rate measured on "
        f"this CPU, reading and writing at the rates measured here, all overlapping.",
    ]
    if hw.get("gpu_measured"):
        out.append(f"GPU figures measured on {hw['gpu']} (see the GPU files below) in the "
                   f"dtype its file names; float32 would run several times slower.")
    else:
        out.append(f"The GPU estimate assumes bf16/fp16 tensor cores: {est['peak_tflops']:g} "
                   f"TFLOP/s is {est['gpu']}'s dense bf16/fp16 peak. In float32 the same "
                   f"forward runs several times slower; run the re-extraction in bf16 or "
                   f"fp16, or multiply the GPU time accordingly.")
    read = ("" if r is None else
            f"; reading {r['bytes_per_s'] / 1e6:,.0f} MB/s over {r['files']} files of "
            f"{r['file_bytes'] / 1000:,.0f} kB, page cache {r['page_cache']}")
    out.append(f"Disk measured at {disk['path']} on this machine: writing "
               f"{w['bytes_per_s'] / 1e6:,.0f} MB/s ({w['shards']} {w['format']} shards of "
               f"{w['shard_bytes'] / 1e6:,.0f} MB of float16 token states, each fsync'd; "
               f"per shard {w['bytes_per_s_shard_min'] / 1e6:,.0f}-"
               f"{w['bytes_per_s_shard_max'] / 1e6:,.0f} MB/s){read}. This is *this* "
               f"machine's path: the target machine's disk must be measured there (run "
               f"`rightsize sizing` on it).")
    out += _geometry_notes(result)
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
    before = before_after_table(result)
    if before is not None:
        tables.append(before)
    return {"answer": answer, "ask": sentence, "tables": tables, "notes": notes(result)}


def table_rows(result: dict[str, Any]) -> list[tuple[str, str]]:
    """(label, value) rows for the CLI: the ask, one row per scenario and model, the disk."""
    text = result["text"]
    rows: list[tuple[str, str]] = [("ask", text["ask"])]
    scen = text["tables"][0]
    for cells in scen["rows"]:
        rows.append((cells[0], "; ".join(f"{h}: {c}" for h, c in
                                         zip(scen["header"][1:], cells[1:], strict=True))))
    rows += [("note", n) for n in text["notes"]]
    return rows
