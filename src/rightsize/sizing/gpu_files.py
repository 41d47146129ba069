"""Which committed GPU bench file (``measurements/gpu/*.json``) measures which model, and why not.

A GPU file is used for a model only when it was measured on CUDA with the same encoder
family, size and input geometry as the model's CPU bench (``metrics/encoders/<model>.json``).
Every file is reported: used for which model, or the reason it is not (e.g. a 256 px echo
file after the default moved to EchoJEPA's 224 px evaluation geometry). A file that does
not match is never used.
"""

from __future__ import annotations

from typing import Any

from rightsize.errors import ParamsError


def mismatch(bench: dict[str, Any], gpu_file: dict[str, Any]) -> str | None:
    """Why ``gpu_file`` does not measure ``bench``'s encoder on a GPU (``None``: it does)."""
    if not str(gpu_file.get("device", "")).startswith("cuda"):
        return f"not a GPU measurement (device {gpu_file.get('device', '?')})"
    for key in ("family", "size"):
        if gpu_file.get(key) != bench.get(key):
            return f"{key} {gpu_file.get(key)} vs {bench.get(key)}"
    mine, theirs = bench.get("geometry") or {}, gpu_file.get("geometry") or {}
    if mine != theirs:
        diffs = [f"{k} {theirs.get(k, '-')} (file) vs {mine.get(k, '-')} (bench)"
                 for k in sorted(set(mine) | set(theirs)) if mine.get(k) != theirs.get(k)]
        return "geometry differs: " + ", ".join(diffs)
    return None


def gpu_matches(bench: dict[str, Any], gpu_file: dict[str, Any]) -> bool:
    """Whether ``gpu_file`` measured the same encoder, size and input as ``bench`` on a GPU."""
    return mismatch(bench, gpu_file) is None


def _gpu_name(f: dict[str, Any]) -> str:
    return str(f.get("hardware", {}).get("gpu", ""))


def pick_gpu_file(model: str, bench: dict[str, Any], files: dict[str, dict[str, Any]],
                  want: str | None) -> tuple[str | None, dict[str, Any] | None]:
    """The committed GPU file for ``model`` (by ``sizing.gpu`` substring when several match)."""
    hits = {name: f for name, f in sorted(files.items()) if gpu_matches(bench, f)}
    if want is not None:
        hits = {n: f for n, f in hits.items() if want.lower() in _gpu_name(f).lower()}
    if len(hits) > 1:
        raise ParamsError(f"sizing.gpu: {len(hits)} GPU files match {model} "
                          f"({', '.join(hits)}); set sizing.gpu to a GPU name to pick one")
    if not hits:
        return None, None
    name = next(iter(hits))
    return name, hits[name]


def gpu_files_report(benches: dict[str, dict[str, Any]], files: dict[str, dict[str, Any]],
                     picked: dict[str, tuple[str | None, dict[str, Any] | None]],
                     models: Any) -> list[dict[str, Any]]:
    """One entry per GPU file: the model it is used for, or why it is not used."""
    used = {name: m for m, (name, _) in picked.items() if name is not None}
    out = []
    for name, f in sorted(files.items()):
        entry = {"file": name, "gpu": _gpu_name(f) or None, "family": f.get("family"),
                 "size": f.get("size"), "used_for": used.get(name)}
        if name in used:
            entry["status"] = f"used for {used[name]}"
        else:
            same = [m for m in models if benches[m].get("family") == f.get("family")]
            reasons = [f"{m}: {mismatch(benches[m], f) or 'another file picked (sizing.gpu)'}"
                       for m in same]
            entry["status"] = "not matching, not used: " + (
                "; ".join(reasons) if reasons else f"no configured model is {f.get('family')}")
        out.append(entry)
    return out
