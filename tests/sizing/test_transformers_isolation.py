"""``transformers`` is imported by the encoders package only (the encoder bench and extract):
every other verb runs without it."""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from pathlib import Path

import pytest
from sizing_fixtures import bench_dict, write_manifest, write_params

from rightsize.cli import build_parser

SRC = Path(__file__).resolve().parents[2] / "src" / "rightsize"
PROBE = """
import sys
from rightsize.cli import main
code = main(sys.argv[1:])
print("CODE", code, "TRANSFORMERS", "transformers" in sys.modules, flush=True)
"""


def _run(argv: list[str], cwd: Path) -> tuple[int, bool]:
    proc = subprocess.run([sys.executable, "-c", PROBE, *argv], capture_output=True, text=True,
                          cwd=cwd, timeout=300)
    line = next(ln for ln in proc.stdout.splitlines() if ln.startswith("CODE "))
    _, code, _, loaded = line.split()
    return int(code), loaded == "True"


def _verbs() -> list[str]:
    import argparse

    sub = next(a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction))
    return sorted(sub.choices)


def test_only_the_encoders_package_imports_transformers() -> None:
    importers = []
    for path in SRC.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names = ([a.name for a in node.names] if isinstance(node, ast.Import)
                     else [node.module or ""] if isinstance(node, ast.ImportFrom) else [])
            if any(n == "transformers" or n.startswith("transformers.") for n in names):
                importers.append(path.relative_to(SRC).as_posix())
    assert importers and all(p.startswith("encoders/") for p in importers), importers


def test_sizing_and_other_verbs_run_without_transformers(tmp_path: Path) -> None:
    enc = tmp_path / "encoders"
    enc.mkdir()
    (enc / "ecg.json").write_text(json.dumps(bench_dict()))
    (enc / "echo.json").write_text(json.dumps(bench_dict("echojepa", "vitl")))
    write_manifest(tmp_path / "m.parquet", [True, True], [1, 2])
    write_params(tmp_path / "params.yaml")
    sizing = ["sizing", "--params", "params.yaml", "--manifest", "m.parquet",
              "--bench-dir", "encoders", "--gpu-dir", "gpu", "--json", "s.json", "-q"]
    assert _run(sizing, tmp_path) == (0, False)
    assert (tmp_path / "s.json").is_file()
    assert _run(["demo-run", "demo", "--seed", "0", "-q"], tmp_path) == (0, False)
    assert _run(["verify", "demo", "--json", "v.json", "-q"], tmp_path) == (0, False)
    assert _run(["scalars", "demo", "-o", "s.csv", "-q"], tmp_path) == (0, False)


@pytest.mark.parametrize("verb", [v for v in _verbs() if v != "bench-encoder"])
def test_verb_help_does_not_import_transformers(verb: str, tmp_path: Path) -> None:
    proc = subprocess.run(
        [sys.executable, "-c", "import sys\nfrom rightsize.cli import main\n"
         f"try:\n    main([{verb!r}, '--help'])\nexcept SystemExit:\n    pass\n"
         "print('TRANSFORMERS', 'transformers' in sys.modules)"],
        capture_output=True, text=True, cwd=tmp_path, timeout=120)
    assert proc.stdout.strip().splitlines()[-1] == "TRANSFORMERS False"


def test_the_check_can_fail_the_bench_path_does_import_it(tmp_path: Path) -> None:
    code = ("import sys\n"
            "from rightsize.encoders.models import EcgGeometry, build_model, make_spec\n"
            "build_model(make_spec('hubert_ecg', 'small', EcgGeometry()), 'meta')\n"
            "print('TRANSFORMERS', 'transformers' in sys.modules)")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          cwd=tmp_path, timeout=120)
    assert proc.stdout.strip().splitlines()[-1] == "TRANSFORMERS True"
