"""Which committed GPU bench file (``measurements/gpu/*.json``) measures which model, and why not.

A GPU file is used for a model only when it was measured on CUDA with the same encoder
family, size and input geometry as the model's CPU bench (``metrics/encoders/<model>.json``).
Every file is reported: used for which model, or the reason it is not (e.g. a 256 px echo
file after the default moved to EchoJEPA's 224 px evaluation geometry). A file that does
not match is never used.
"""

from __future__ import annotations

from typing import Any

from rightsize.errors import DataError, ParamsError


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


def check_gpu_files(files: dict[str, dict[str, Any]], want: str | None) -> None:
    """Refuse GPU files that cannot be used, and a ``sizing.gpu`` that names none of them.

    A GPU file without a positive ``records_per_s`` is ``DataError`` naming the file (exit
    4): it was measured wrong, and listing it as used would hide that. ``sizing.gpu`` that
    is in no committed file's GPU name is ``ParamsError`` naming the key and every file
    seen (exit 2), never a silent fall back to the estimate.
    """
    for name, f in sorted(files.items()):
        rate = f.get("records_per_s")
        if str(f.get("device", "")).startswith("cuda") and not (
                isinstance(rate, int | float) and not isinstance(rate, bool) and rate > 0
                and rate != float("inf")):
            raise DataError(f"{name}: records_per_s must be a positive rate, got {rate!r} "
                            f"(a GPU file that measured nothing; measure it again or remove it)")
    if want is not None and not any(want.lower() in _gpu_name(f).lower()
                                    for f in files.values()):
        seen = ", ".join(f"{n} ({_gpu_name(f) or 'no GPU name'})"
                         for n, f in sorted(files.items())) or "none"
        raise ParamsError(f"sizing.gpu: {want!r} names no committed GPU file (files seen: "
                          f"{seen}); set it to part of one's GPU name, or null")


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
                     models: Any, want: str | None = None) -> list[dict[str, Any]]:
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
            named = want is None or want.lower() in _gpu_name(f).lower()
            reasons = [f"{m}: {mismatch(benches[m], f) or _why_not(m, picked, named, want)}"
                       for m in same]
            entry["status"] = "not matching, not used: " + (
                "; ".join(reasons) if reasons else f"no configured model is {f.get('family')}")
        out.append(entry)
    return out


def _why_not(model: str, picked: dict[str, tuple[str | None, dict[str, Any] | None]],
             named: bool, want: str | None) -> str:
    if not named:
        return f"its GPU is not the one sizing.gpu names ({want!r})"
    other = picked.get(model, (None, None))[0]
    return f"{other} used instead" if other else "not picked"
