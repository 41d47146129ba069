"""The ``files`` source's ECG input when it is a ``rightsize extract`` folder: read only when
complete and verified.

``cohort.files.ecg`` may name an extraction's output folder or its ``shards`` folder. Either
is recognised by its shard records (``shards/shard-<s>.json``) and is read only when:

* ``SHA256SUMS`` is there (``extract`` writes it last, once every shard is done: a killed or
  unfinished run has none) and every file it lists has its SHA-256;
* every ``shards/shard-*`` file is listed (none left over from another run);
* every shard was written under one fingerprint (layers, dtype, weights, preprocessing, ...).

Otherwise :class:`~rightsize.errors.DataError` (exit 4) names the folder and why. A folder of
parquet files that is not an extraction is read as before.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from rightsize.errors import DataError
from rightsize.ground.sha256 import MANIFEST, sha256_file

SHARDS = "shards"


@dataclass(frozen=True)
class VerifiedExtraction:
    """A complete extraction: where its shards are and what was checked."""

    folder: Path           # the extraction's output folder
    shards: Path           # its shards folder (what the source reads)
    files: int             # files verified against SHA256SUMS
    shard_count: int


def extraction_folder(path: Path) -> Path | None:
    """The extraction output folder ``path`` is (or whose shards folder it is), else None."""
    if not path.is_dir():
        return None
    if (path / SHARDS).is_dir() and any((path / SHARDS).glob("shard-*.json")):
        return path
    if any(path.glob("shard-*.json")):
        return path.parent
    return None


def _manifest(folder: Path) -> dict[str, str]:
    path = folder / MANIFEST
    if not path.is_file():
        raise DataError(f"{folder}: not a complete extraction: no {MANIFEST} (the run was "
                        f"killed or is unfinished: rerun rightsize extract with --out {folder})")
    entries: dict[str, str] = {}
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError) as exc:
        raise DataError(f"{path}: cannot read ({exc})") from None
    for no, line in enumerate(lines, 1):
        digest, sep, rel = line.partition("  ")
        if not sep or len(digest) != 64 or Path(rel).is_absolute() or ".." in Path(rel).parts:
            raise DataError(f"{path}:{no}: not a sha256sum line")
        entries[rel] = digest.lower()
    return entries


def verify_extraction(path: Path) -> VerifiedExtraction | None:
    """Check the extraction at ``path`` (see the module doc); None when it is not one."""
    folder = extraction_folder(path)
    if folder is None:
        return None
    entries = _manifest(folder)
    for rel, want in sorted(entries.items()):
        try:
            got = sha256_file(folder / rel)[0]
        except OSError as exc:
            raise DataError(f"{folder}: not a verified extraction: {rel} listed in {MANIFEST} "
                            f"cannot be read ({exc.strerror or exc})") from None
        if got != want:
            raise DataError(f"{folder}: not a verified extraction: {rel} does not match its "
                            f"SHA-256 in {MANIFEST} (changed since the run closed the folder)")
    shards = folder / SHARDS
    present = sorted(p for p in shards.glob("shard-*") if p.is_file())
    extra = [p.name for p in present if f"{SHARDS}/{p.name}" not in entries]
    if extra:
        raise DataError(f"{folder}: not a verified extraction: {SHARDS}/{extra[0]} is not in "
                        f"{MANIFEST} ({len(extra)} such file(s), left from another run?)")
    records = sorted(p for p in present if p.suffix == ".json")
    first: tuple[str, dict] | None = None
    for rec in records:
        try:
            fp = json.loads(rec.read_text(encoding="utf-8")).get("fingerprint")
        except (OSError, ValueError, AttributeError):
            raise DataError(f"{rec}: not a shard record") from None
        if first is None:
            first = (rec.name, fp)
        elif fp != first[1]:
            keys = sorted(k for k in set(fp or {}) | set(first[1] or {})
                          if (fp or {}).get(k) != (first[1] or {}).get(k))
            raise DataError(f"{folder}: shards written under different settings: {first[0]} "
                            f"and {rec.name} differ in {', '.join(keys) or 'their fingerprint'}")
    return VerifiedExtraction(folder, shards, len(entries), len(records))
