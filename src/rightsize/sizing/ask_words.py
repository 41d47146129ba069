"""The ask in words: the short answer and the one sentence the report leads with.

The sentence says what was sized (records and their source, the assumption a count rests
on, tokens per record x layers kept x width and dtype, the geometry), the option the rule
picked (:mod:`rightsize.sizing.ask`) with its time and bound, what is unknown, whether the
shards fit, and when the CPU timing ran under load.
"""

from __future__ import annotations

from typing import Any

from rightsize.fmt import compact_bytes, compact_range, duration_range

UNITS = {"hubert_ecg": "ECG records", "echojepa": "videos"}
PER = {"hubert_ecg": "ECG record", "echojepa": "video"}


def how(parts: list[dict[str, Any]]) -> str:
    """measured / extrapolated / estimated for a set of compute parts (the weakest wins)."""
    hows = {p["how"] for p in parts}
    for word in ("not measured", "estimated", "extrapolated"):
        if word in hows:
            return word
    return "measured"


def kept_words(r: dict[str, Any]) -> str:
    """``93 tokens × 4 layers × 768, float16`` (or pooled vectors) per record of a row."""
    layers = f"{r['layers_kept']} layer{'s' if r['layers_kept'] != 1 else ''}"
    if r["keep"] == "tokens":
        what = f"{r['tokens_per_record']:,} tokens"
    else:
        n = r["inputs_per_record"]
        what = f"{n} pooled {'crop' if r['family'] == 'hubert_ecg' else 'clip'} " \
               f"vector{'s' if n != 1 else ''}"
    return f"{what} × {layers} × {r['hidden_size']:,}, {r['dtype']} per {PER[r['family']]}"


def records_words(result: dict[str, Any], scenario: str, models: list[str]) -> str:
    """Each model's records, source and assumption."""
    rows = result["scenarios"][scenario]["models"]
    out = []
    for m in models:
        r = rows[m]
        text = (f"{m} {r['records']:,} {UNITS.get(r['family'], 'records')}, "
                f"source: {r['source']}")
        if r.get("assumption"):
            text += f", assumption: {r['assumption']}"
        out.append(text)
    return "; ".join(out)


def fits_words(result: dict[str, Any], block: dict[str, Any]) -> str:
    """``fits the 55 GB free at .: yes; the 2 TB quota: yes``."""
    disk, out = result["disk"], []
    if block.get("fits_free_space") is not None:
        out.append(f"fits the {compact_bytes(disk['free_bytes'])} free at {disk['path']} "
                   f"(when sizing ran): "
                   f"{'yes' if block['fits_free_space'] else 'NO'}")
    if block.get("fits_quota") is not None:
        out.append(f"the {compact_bytes(disk['quota_bytes'])} quota: "
                   f"{'yes' if block['fits_quota'] else 'NO'}")
    return "; ".join(out) or "no disk check"


def cpu_where(result: dict[str, Any], models: list[str], cores: str, how_: str) -> str:
    """``this machine's 2 cores (Intel Xeon ..., measured)`` when every bench of ``models``
    ran on this host; ``2 cores of AMD EPYC ... (measured there, not this machine)`` when one
    ran on another; the bench's CPU and "no machine stamp" for a bench file without one."""
    benches = [result["benches"].get(m) or {} for m in models]
    same = {b.get("this_machine") for b in benches}
    words = "; ".join(dict.fromkeys((b.get("machine") or {}).get("words", "?") for b in benches))
    if same == {True}:
        return f"this machine's {cores} ({words}, {how_})"
    if False in same:
        return f"{cores} of {words} ({how_} there, not this machine)"
    return (f"{cores} of {result['hardware']['cpu']} ({how_}; no machine stamp: maybe not "
            f"this machine)")


def _gpu_words(
result: dict[str, Any], k: int, gpu_how: str) -> str:
    hw = result["hardware"]
    return (f"{k} GPU{'s' if k != 1 else ''} ({hw['gpu']}, {gpu_how}; "
            f"{result['cpu_cores_per_gpu']} CPU cores per GPU)")


def _cost(c: dict[str, Any] | None) -> str:
    if not c:
        return ""
    return (f"; at your prices (sizing.prices, not measured): "
            f"{compact_range(c['low'], c['high'])} ({c['what']})")


def _geometry(result: dict[str, Any], models: list[str]) -> str:
    out = []
    for m in models:
        b = result["benches"].get(m, {})
        if b.get("geometry_words"):
            out.append(f"{m} sized at {b['geometry_words']}")
    return "; ".join(out)


def _load(result: dict[str, Any], models: list[str]) -> str:
    loads = [result["benches"][m]["load"] for m in models
             if ((result["benches"].get(m) or {}).get("load") or {}).get("loaded")]
    if not loads:
        return ""
    worst = max(x["max"] for x in loads)
    return (f" CPU timing measured under load {worst:.2f} (load average over "
            f"{loads[0]['cores']} cores): may be slow.")


def _span(j: dict[str, Any] | None) -> str:
    return "not measured" if not j or j.get("wall_s_high") is None else \
        duration_range(j["wall_s_low"], j["wall_s_high"])


def _omitted(a: dict[str, Any]) -> str:
    """``; left out: echo (no records in paired_cohort)`` for ask models with no count."""
    left = a.get("omitted") or []
    return (f"; left out: {', '.join(left)} (no records in {a['scenario']})" if left else "")


def ask_sentence(result: dict[str, Any]) -> tuple[str, str]:
    """(short answer, sentence): the option the ask's rule picked, then the rest."""
    a, hw = result["ask"], result["hardware"]
    rows = result["scenarios"][a["scenario"]]["models"]
    models = a["models"]
    cpu_how = how([rows[m]["cpu"]["parts"]["compute"] for m in models])
    gpu_how = how([rows[m]["gpu"]["parts"]["compute"] for m in models])
    dtype = rows[models[0]]["dtype"]
    margin = a.get("margin", 1.0)
    deadline = (f"deadline {result['deadline_h']:g} h with a {margin:g}× margin (finish "
                f"within {result['deadline_h'] / margin:.3g} h)")
    geometry = _geometry(result, models)
    tail = (f"({a['scenario']}: {records_words(result, a['scenario'], models)}; "
            f"{'; '.join(kept_words(rows[m]) for m in models)}"
            f"{'; ' + geometry if geometry else ''}; {deadline}; {fits_words(result, a)}"
            f"{_omitted(a)})")
    load = _load(result, models)
    shards = f"{compact_bytes(a['storage_bytes'])} of {dtype} shards"
    cpu, opt = a["cpu"], a["option"]
    cores = f"{hw['cores']} core{'s' if hw['cores'] != 1 else ''}"
    cpu_words = cpu_where(result, models, cores, cpu_how)
    unknown = ", ".join(a.get("unknown") or [])
    fastest = a["gpu"]
    gpu_h = compact_range(fastest.get("gpu_hours_low"), fastest.get("gpu_hours_high"))
    fastest_words = (f"{_gpu_words(result, result['gpus'], gpu_how)} would take "
                     f"{_span(fastest)} ({gpu_h} GPU-hours), bound by {fastest['bound']}")
    if a["choice"] == "no_fit":
        from rightsize.sizing.request import scratch_words

        disk = result["disk"]
        need = scratch_words(a["storage_bytes"], disk.get("free_bytes"),
                             disk.get("quota_bytes"), disk.get("path", "?"))
        return (f"Request scratch: {need.split(';')[0]}",
                f"The shards do not fit here: {need} (or keep fewer layers). Time, on "
                f"scratch: {cpu_words} would take "
                f"{_span(cpu)}; {fastest_words}"
                f"{'; unknown: ' + unknown if unknown else ''} {tail}.{load}")
    if a["choice"] == "unknown":
        where = cpu_words if a["gpus_chosen"] is None else \
            _gpu_words(result, a["gpus_chosen"], gpu_how)
        return (f"Unknown: {unknown}",
                f"Unknown: {unknown} (not measured). Without it, {where} would take "
                f"{_span(opt)}, bound by {opt['bound']}; no option can be claimed to meet "
                f"the deadline until it is measured; {fastest_words}; {shards} {tail}.{load}")
    if a["choice"] == "cpu":
        return ("No GPU needed",
                f"No GPU needed: {_span(cpu)} on {cpu_words}, {shards}, bound by "
                f"{cpu['bound']}{_cost(a['cost'])} {tail}.{load}")
    if a["choice"] == "gpu":
        k = a["gpus_chosen"]
        gpu_span = compact_range(opt["gpu_hours_low"], opt["gpu_hours_high"])
        return (f"{k} GPU{'s' if k != 1 else ''}, {gpu_span} GPU-hours",
                f"{_gpu_words(result, k, gpu_how)}: {_span(opt)} wall-clock, {gpu_span} "
                f"GPU-hours, {shards}, bound by {opt['bound']}{_cost(a['cost'])}; "
                f"{cpu_words} would take {_span(cpu)}, over the deadline with its margin "
                f"{tail}.{load}")
    return ("Over the deadline",
            f"Nothing configured finishes within the {result['deadline_h']:g} h deadline "
            f"with its {margin:g}× margin: {cpu_words} would take {_span(cpu)}; {fastest_words}; "
            f"{shards} {tail}.{load}")
