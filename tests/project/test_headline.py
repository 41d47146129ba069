"""Headline metrics vs detail JSON (issue 25): what dvc.yaml declares, what the docs say, and
that no number of the layout before (commit 36979d8, every file a metrics file) got lost.

The key mapping (docs/outputs.md#headline-metrics): each of 36979d8's metrics files is now a
detail file at the same path with the same keys; each headline number is the detail number
its row names (``src/rightsize/verbs/headline.py``, ``LAYOUT``).
"""

from __future__ import annotations

import json
import math
import re
import subprocess
from pathlib import Path

import import_graph as g
import pytest
import yaml

from rightsize.errors import DataError
from rightsize.probe_names import PROBES
from rightsize.verbs import headline as hl

BEFORE = "36979d8"           # the last commit whose dvc.yaml declared every file as metrics
METRICS = g.REPO / "metrics"

# kind (with its source) -> how docs/outputs.md writes the name and the detail file
DOC_NAMES = {
    ("probe", "eval"): ("<probe>", "eval/<probe>.json"),
    ("probe", "missing"): ("<probe>", "missing/<probe>.json"),
    ("run", "report"): ("<run>", "telemetry/<run>.json"),
    ("run_seconds", "report"): ("<probe>", "telemetry/probe_<probe>.json"),
    ("cohort", "cohort"): ("manifest", "cohort.json"),
    ("footprint", "footprint"): ("footprint", "footprint.json"),
    ("encoder", "bench"): ("<model>_encoder", "encoders/<model>.json"),
    ("sizing", "sizing"): ("ask", "sizing.json"),
    ("token_cost", "token_cost"): ("token_cost", "token_cost.json"),
    ("extract", "extract"): ("extract", "extract.json"),
    ("planted_ceiling", "planted_ceiling"): ("planted_ceiling", "eval/fused_ceiling.json"),
    ("compare", "compare"): ("fused_vs_concat", "fused_vs_concat.json"),
}
ROW = re.compile(r"^\| `([^`]+)` \| [^|]+ \| `([^`:]+): ([^`]+)` \| .+ \|$")


def _stages() -> dict:
    return yaml.safe_load((g.REPO / "dvc.yaml").read_text())["stages"]


def _paths(entries: list) -> dict[str, dict]:
    """``{path: options}`` of a dvc.yaml outs/metrics list."""
    out = {}
    for e in entries or []:
        path, opts = (next(iter(e.items())) if isinstance(e, dict) else (e, {}))
        out[path] = opts or {}
    return out


def headline_files() -> list[tuple[Path, str, str | None, dict[str, Path]]]:
    """``(headline file, kind, item, {source: detail file})`` of every headline file the
    committed metrics hold, by the rule of docs/outputs.md."""
    out = []
    for f in sorted((METRICS / "headline").rglob("*.json")):
        rel = f.relative_to(METRICS / "headline")
        item = rel.stem
        if rel.parts[0] == "probes":
            out.append((f, "probe", item, {"eval": METRICS / "eval" / f"{item}.json",
                                            "missing": METRICS / "missing" / f"{item}.json"}))
        elif rel.parts[0] == "probe_runs":
            out.append((f, "run_seconds", item,
                        {"report": METRICS / "telemetry" / f"probe_{item}.json"}))
        elif rel.parts[0] == "telemetry":
            out.append((f, "run", item, {"report": METRICS / "telemetry" / rel.name}))
        elif rel.parts[0] == "encoders":
            out.append((f, "encoder", item, {"bench": METRICS / "encoders" / rel.name}))
        elif item == "planted_ceiling":     # its detail file lies beside the fused eval
            out.append((f, item, None, {item: METRICS / "eval" / "fused_ceiling.json"}))
        elif item == "fused_vs_concat":     # compare: named after its two probes
            out.append((f, "compare", item, {"compare": METRICS / rel.name}))
        else:
            kind = {"cohort": "cohort", "footprint": "footprint", "sizing": "sizing",
                    "token_cost": "token_cost", "extract": "extract"}[item]
            out.append((f, kind, None, {kind: METRICS / rel.name}))
    return out


def _leaves(x, prefix: str = "") -> dict[str, object]:
    """``{dotted key: leaf}`` (list items as ``key[i]``)."""
    if isinstance(x, dict):
        return {k: v for key, val in x.items()
                for k, v in _leaves(val, f"{prefix}.{key}" if prefix else str(key)).items()}
    if isinstance(x, list):
        return {k: v for i, val in enumerate(x) for k, v in _leaves(val, f"{prefix}[{i}]").items()}
    return {prefix: x}


def _number(x) -> bool:
    return isinstance(x, int | float) and not isinstance(x, bool)


def _git_show(rev: str, path: str) -> str:
    return subprocess.run(["git", "show", f"{rev}:{path}"], cwd=g.REPO, capture_output=True,
                          text=True, check=True).stdout


@pytest.fixture(scope="module")
def before() -> dict[str, dict]:
    """36979d8's metrics JSON files: ``{path: parsed}``."""
    if subprocess.run(["git", "cat-file", "-e", f"{BEFORE}^{{commit}}"], cwd=g.REPO,
                      capture_output=True).returncode:
        pytest.skip(f"commit {BEFORE} is not in this clone's history (shallow clone?)")
    names = subprocess.run(["git", "ls-tree", "-r", "--name-only", BEFORE, "metrics"],
                           cwd=g.REPO, capture_output=True, text=True, check=True).stdout.split()
    return {n: json.loads(_git_show(BEFORE, n)) for n in names if n.endswith(".json")}


def test_dvc_yaml_declares_headline_files_as_metrics_and_detail_as_uncached_outs():
    headline, detail = {}, {}
    for name, body in _stages().items():
        body = body.get("do", body)
        for path, opts in _paths(body.get("metrics")).items():
            assert path.startswith("metrics/headline/"), f"stage {name}: metrics {path}"
            assert opts.get("cache") is False, path
            cmd = " ".join(str(body["cmd"]).split())
            assert f"--headline {path}" in cmd or f"--headline '{path}'" in cmd, name
            headline[path] = name
        for path, opts in _paths(body.get("outs")).items():
            if path.startswith("metrics/"):
                assert opts.get("cache") is False, f"stage {name}: {path} is cached"
                detail[path] = name
    # every stage that writes detail JSON under metrics/ has its headline file, but for the
    # counts the token_cost stage joins (token_cost_case@N: its headline is token_cost's) and
    # the two checks no number comes from (the machine's fingerprint, the substituted values)
    assert "metrics/token_cost" in _stages()["token_cost"]["deps"]
    assert {s for p, s in detail.items() if p.endswith(".json")
            and not p.startswith(("metrics/verify/", "metrics/token_cost/", "metrics/machine",
                                  "metrics/stage_values.json"))
            } == set(headline.values())


def test_every_headline_number_is_in_the_outputs_table():
    text = (g.REPO / "docs/outputs.md").read_text(encoding="utf-8")
    table = text.split("## Headline metrics", 1)[1].split("\n## ", 1)[0]
    documented = {(m[1], f"{m[2]}: {m[3]}") for ln in table.splitlines() if (m := ROW.match(ln))}
    expected = set()
    for kind, spec in hl.LAYOUT.items():
        for pick in spec.picks:
            name, file = DOC_NAMES[(kind, pick.source)]
            expected.add((f"{name}.{pick.name}", f"{file}: {pick.key}"))
    assert documented == expected


def test_committed_headline_numbers_are_their_detail_numbers():
    files = headline_files()
    assert {k for _, k, _, _ in files} == set(hl.LAYOUT)
    for path, kind, item, sources in files:
        doc = json.loads(path.read_text())
        details = {s: json.loads(p.read_text()) for s, p in sources.items()}
        name = hl.LAYOUT[kind].name.format(item=item)
        assert list(doc) == [name], path
        picks = {p.name: p for p in hl.LAYOUT[kind].picks}
        assert set(doc[name]) <= set(picks), path
        for key, value in doc[name].items():
            pick = picks[key]
            source = _leaves(details[pick.source])[pick.key]
            assert _number(value) and value == source * pick.scale, (path, key)
        left_out = {k for k, p in picks.items() if not p.optional} - set(doc[name])
        assert not left_out, f"{path}: {sorted(left_out)} missing"


def _chosen_otherwise(key: str, old: dict, new: dict) -> bool:
    """True when ``key`` lies in a block whose measured ``choice`` differs between the two
    runs (sizing's cheapest option: a GPU option has GPU counts, a CPU option has none)."""
    parts = key.split(".")
    for i in range(1, len(parts)):
        choice = ".".join([*parts[:i], "choice"])
        if choice in old and choice in new and old[choice] != new[choice]:
            return True
    return False


def test_every_number_of_36979d8_is_still_written(before):
    # Key by key (the values of timings, memory and rates move run to run): a number may be
    # null this run (a detector that found nothing in the step times), or absent where a
    # measured choice changed the block's shape; every other key must be there.
    assert len(before) == 22       # 21 metrics files and metrics/verify/demo.json
    for path, old in before.items():
        new_path = g.REPO / path                      # the detail file: same path, same keys
        assert new_path.is_file(), f"{path}: gone"
        old_leaves, new = _leaves(old), _leaves(json.loads(new_path.read_text()))
        lost = [k for k, v in old_leaves.items() if _number(v)
                and not (k in new and (new[k] is None or _number(new[k])))
                and not _chosen_otherwise(k, old_leaves, new)]
        assert not lost, f"{path}: numeric keys of {BEFORE} no longer written: {lost[:10]}"


def test_the_headline_of_36979d8s_numbers_is_those_numbers(before):
    # Today's edge code run on the results 36979d8 wrote: every headline number is the
    # detail number its row names, by value (the detail is the result itself).
    runs = [p for p in before if p.startswith("metrics/telemetry/")]
    cases = [("probe", p, {"eval": f"metrics/eval/{p}.json",
                           "missing": f"metrics/missing/{p}.json"})
             for p in PROBES]
    cases += [("run_seconds" if Path(r).stem.startswith("probe_") else "run",
               Path(r).stem.removeprefix("probe_"), {"report": r}) for r in runs]
    cases += [("encoder", m, {"bench": f"metrics/encoders/{m}.json"}) for m in ("ecg", "echo")]
    cases += [(k, None, {k: f"metrics/{k}.json"}) for k in ("cohort", "footprint", "sizing")]
    seen = 0
    for kind, item, sources in cases:
        docs = {s: before[p] for s, p in sources.items()}
        numbers = hl.numbers(kind, docs)
        for pick in hl.LAYOUT[kind].picks:
            old = _leaves(docs[pick.source]).get(pick.key)
            if _number(old) and math.isfinite(old):
                assert numbers[pick.name] == old * pick.scale, (kind, item, pick.name)
                seen += 1
            else:
                assert pick.name not in numbers
    assert seen >= 68   # 72 until payload, params and FLOPs per record moved to detail


def test_a_missing_key_is_an_error_an_optional_or_null_one_is_left_out():
    report = {"step_time_s": {"median": 0.5}, "epoch_hours": 2.0, "epochs_run": 3,
              "active_hours": None, "calendar_hours": 4.0}
    doc = hl.headline("run", "demo", report=report)
    assert doc == {"demo": {"step_time_s": 0.5, "epoch_hours": 2.0, "epochs_run": 3,
                            "calendar_hours": 4.0}}
    assert hl.headline("run_seconds", "fused", report=report)["fused"]["epoch_s"] == 7200.0
    with pytest.raises(DataError, match="no key epoch_hours .headline epoch_hours"):
        hl.headline("run", "demo", report={k: v for k, v in report.items()
                                           if k != "epoch_hours"})
