"""Model metrics of this tree against a git revision's, key by key.

Reads every committed JSON under ``metrics/{train,eval,missing}`` twice: as the revision
holds it (``git show REV:path``) and as it is on disk (after ``dvc repro train`` here), and
compares every leaf that is a model number. Timings, peak RSS, the hardware stamp and
``checkpoint_bytes`` (the sidecar holds wall-clock floats) are counted apart, not compared.

    python benchmarks/compare_metrics.py c278325
    python benchmarks/compare_metrics.py --against saved/metrics   # a copy made before a change

A revision's committed metrics come from the machine that committed them; on another CPU
compare with ``--against`` a copy of ``metrics/`` that ``dvc repro`` wrote here before the change.
"""

from __future__ import annotations

import argparse
import json
import subprocess
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
NOT_MODEL = ("wall_clock_s", "peak_rss", "hardware", "machine", "step_s", "bootstrap_s",
             "checkpoint_bytes", "throughput")


def flat(node: Any, prefix: str = "") -> dict[str, Any]:
    """``{"a.b.0": leaf}`` of nested dicts and lists."""
    if isinstance(node, dict):
        return {k: v for key, val in node.items() for k, v in flat(val, f"{prefix}{key}.").items()}
    if isinstance(node, list):
        return {k: v for i, val in enumerate(node) for k, v in flat(val, f"{prefix}{i}.").items()}
    return {prefix[:-1]: node}


def _reference(rev: str | None, against: Path | None, f: str) -> str:
    """The reference text of metrics file ``f``: a revision's or a saved copy's."""
    if against is not None:
        return (against / Path(f).relative_to("metrics")).read_text()
    return subprocess.run(["git", "show", f"{rev}:{f}"], cwd=REPO, capture_output=True,
                          text=True, check=True).stdout


def compare(rev: str | None, against: Path | None = None
            ) -> tuple[int, list[str], list[str], int]:
    """(identical keys, differing keys, keys only here, keys not compared)."""
    files = subprocess.run(["git", "ls-files", "metrics/train", "metrics/eval", "metrics/missing"],
                           cwd=REPO, capture_output=True, text=True, check=True).stdout.split()
    same, differ, added, skipped = 0, [], [], 0
    for f in (f for f in files if f.endswith(".json")):
        old = flat(json.loads(_reference(rev, against, f)))
        new = flat(json.loads((REPO / f).read_text()))
        for key in sorted(set(old) | set(new)):
            if any(part in key for part in NOT_MODEL):
                skipped += 1
            elif key not in old:
                added.append(f"{f}: {key}")
            elif key not in new or json.dumps(old[key]) != json.dumps(new[key]):
                differ.append(f"{f}: {key} {old.get(key)!r} -> {new.get(key)!r}")
            else:
                same += 1
    return same, differ, added, skipped


def main() -> None:
    """Print the comparison; exit 1 when a model number differs."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("rev", nargs="?", help="git revision whose committed metrics are the reference")
    ap.add_argument("--against", type=Path, help="a saved copy of metrics/ as the reference")
    args = ap.parse_args()
    if (args.rev is None) == (args.against is None):
        ap.error("give a revision or --against DIR")
    same, differ, added, skipped = compare(args.rev, args.against)
    print(f"{same} model keys identical, {len(differ)} differ, {len(added)} new, "
          f"{skipped} timing/size keys not compared")
    print("\n".join([*differ, *(f"new: {a}" for a in added)]))
    raise SystemExit(1 if differ else 0)


if __name__ == "__main__":
    main()
