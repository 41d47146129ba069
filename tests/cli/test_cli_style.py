"""One CLI style (issue 44.8), walked over every verb the parser registers.

Each verb's ``--help`` exits 0, names every option with help text, and is wrapped to the
terminal (only indented lines written that way, the example commands, may run past it).
A usage error is one line ``rightsize: error: ...`` and exit 2, never argparse's usage block;
a path a verb reads that does not exist is named on that one line (exit 2, or 4 where
docs/failures.md says bad data), before any flag the command line also lacks.
"""

from __future__ import annotations

import argparse
import json

import pytest

from rightsize.cli import VERBS, build_parser, main

ALL = sorted(VERBS)
WIDTH = 64

# verb -> a command line reading BAD (a path that does not exist); TMP is a scratch folder.
BAD_PATH = {
    "scalars": ["BAD"],                                      # no -o: the path comes first
    "telemetry": ["BAD"],                                    # no --train-records either
    "rescue": ["BAD", "TMP/dest"],
    "verify": ["BAD"],
    "demo-run": ["TMP/run", "--params", "BAD"],
    "cohort": ["--check", "BAD"],
    "train": ["fused", "--params", "BAD", "--manifest", "TMP/m.parquet", "--out", "TMP/f"],
    "evaluate": ["fused", "--params", "BAD", "--model", "TMP/f", "--manifest", "TMP/m.parquet",
                 "--json", "TMP/e.json"],
    "missing-modality": ["fused", "--params", "BAD", "--model", "TMP/f",
                         "--manifest", "TMP/m.parquet", "--json", "TMP/e.json"],
    "token-cost": ["--params", "BAD", "--tokens", "4", "--json", "TMP/t.json"],
    "planted-ceiling": ["--params", "BAD", "--json", "TMP/c.json"],
    "compare-probes": ["fused", "concat", "--params", "BAD", "--json", "TMP/c.json"],
    "footprint": ["--params", "BAD", "--manifest", "TMP/m.parquet", "--json", "TMP/f.json"],
    "sizing": ["--params", "BAD"],
    "bench-encoder": ["ecg", "--params", "BAD", "--json", "TMP/b.json"],
    "extract": ["--params", "BAD", "--out", "TMP/x"],
    "ecg-demo": ["TMP/d", "--params", "BAD"],
    "ecg-input": ["BAD", "-o", "TMP/r.npy"],
    "report": ["--params", "BAD", "--out", "TMP/r"],
    "check-params": ["--params", "BAD"],
}
# Verbs that read no path a user names: seeds and sweep ask DVC; machine's --disk may name a
# folder not made yet (its filesystem is the nearest existing parent's).
NO_INPUT_PATH = {"spread", "sweep", "machine"}


def _run(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    """``rightsize ARGV`` in this process: exit code (argparse's SystemExit too), out, err."""
    try:
        rc = main(argv)
    except SystemExit as exc:
        rc = exc.code if isinstance(exc.code, int) else 2
    cap = capsys.readouterr()
    return rc, cap.out, cap.err


def _one_line(err: str) -> str:
    lines = err.splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith("rightsize: error: "), err
    assert "usage:" not in err and "Traceback" not in err, err
    return lines[0]


def _verb_parser(verb: str) -> argparse.ArgumentParser:
    sub = next(a for a in build_parser(verb)._actions
               if isinstance(a, argparse._SubParsersAction))
    return sub.choices[verb]


def test_every_verb_is_walked():
    assert set(BAD_PATH) | NO_INPUT_PATH == set(VERBS)
    assert not set(BAD_PATH) & NO_INPUT_PATH


@pytest.mark.parametrize("verb", ALL)
def test_help_exits_0_names_every_option_and_is_wrapped(verb, capsys, monkeypatch):
    monkeypatch.setenv("COLUMNS", str(WIDTH))
    rc, out, err = _run([verb, "--help"], capsys)
    assert rc == 0 and err == ""
    parser = _verb_parser(verb)
    for action in parser._actions:
        assert action.help and action.help != argparse.SUPPRESS, (verb, action.dest)
        names = action.option_strings or [action.metavar or action.dest]
        assert all(name in out for name in names), (verb, names)
    written = "\n".join(filter(None, (parser.description, parser.epilog))).splitlines()
    verbatim = {line.rstrip() for line in written if line[:1].isspace()}
    for line in out.splitlines():
        assert len(line) <= WIDTH or line.rstrip() in verbatim, (verb, line)


@pytest.mark.parametrize("verb", ALL)
def test_an_unknown_flag_is_one_line_and_exit_2(verb, capsys):
    rc, out, err = _run([verb, "--no-such-flag"], capsys)
    line = _one_line(err)
    assert rc == 2 and out == ""
    assert line.endswith(f"(see rightsize {verb} --help)"), line
    shape = ("unrecognized arguments: --no-such-flag", "the following arguments are required",
             "one of the arguments")
    assert any(s in line for s in shape), line


@pytest.mark.parametrize("verb", sorted(BAD_PATH))
def test_a_path_that_does_not_exist_is_named_on_one_line(verb, tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    bad = str(tmp_path / "no" / "such" / "thing")
    argv = [verb, *(bad if a == "BAD" else a.replace("TMP", str(tmp_path))
                    for a in BAD_PATH[verb]), "-q"]
    rc, out, err = _run(argv, capsys)
    assert rc in (2, 4) and out == "", (rc, out, err)
    assert bad in _one_line(err)
    assert sorted(p.name for p in tmp_path.iterdir()) == []     # nothing written


def test_unknown_verb_and_missing_flags_are_one_line(capsys):
    rc, _, err = _run(["no-such-verb"], capsys)
    assert rc == 2
    assert _one_line(err) == "rightsize: error: unknown verb 'no-such-verb' (see rightsize --help)"
    rc, _, err = _run(["scalars"], capsys)
    assert rc == 2 and _one_line(err) == (
        "rightsize: error: the following arguments are required: ROOT, -o/--out/--output "
        "(see rightsize scalars --help)")


def test_a_bad_run_dir_is_named_before_the_missing_geometry(tmp_path, capsys):
    rc, _, err = _run(["telemetry", str(tmp_path / "absent")], capsys)
    assert rc == 2
    assert _one_line(err) == f"rightsize: error: {tmp_path / 'absent'}: no such file or directory"
    (tmp_path / "run").mkdir()
    rc, _, err = _run(["telemetry", str(tmp_path / "run")], capsys)
    assert rc == 2 and "--train-records is required" in _one_line(err)


def test_help_keeps_example_lines_as_written(capsys, monkeypatch):
    monkeypatch.setenv("COLUMNS", "50")
    rc, out, _ = _run(["train", "--help"], capsys)
    assert rc == 0
    lines = out.splitlines()
    example = "  rightsize train fused --params params.yaml --manifest data/manifest.parquet \\"
    assert example in lines
    prose = [line for line in lines if not line[:1].isspace() and line.strip()]
    assert prose and max(map(len, prose)) <= 50



# Verbs for which a params file is an optional source (telemetry's flags, demo-run's --seed,
# ecg-input's --crops, compare-probes' unfiltered comparison stand alone): --params left out
# is params.yaml when present, else none, so they still run outside a project folder.
PARAMS_OPTIONAL = {"telemetry", "demo-run", "ecg-input", "compare-probes"}


# Verbs that write no JSON report (files only).
NO_JSON_REPORT = {"demo-run", "ecg-demo", "ecg-input"}


def _option(verb: str, flag: str) -> argparse.Action | None:
    return next((a for a in _verb_parser(verb)._actions if flag in a.option_strings), None)


@pytest.mark.parametrize("verb", ALL)
def test_one_spelling_for_params_json_and_out(verb):
    params = _option(verb, "--params")
    if params is not None and verb not in PARAMS_OPTIONAL:
        assert params.default == "params.yaml" and not params.required, verb
    if verb in PARAMS_OPTIONAL:
        assert params.default is None and not params.required, verb
        assert "default: params.yaml when present" in params.help, verb
    json_opt = _option(verb, "--json")
    if json_opt is not None:                       # --json PATH ('-' = stdout), never a switch
        assert json_opt.nargs in (None, "?"), verb
        assert not isinstance(json_opt, argparse._StoreTrueAction), verb
    for action in _verb_parser(verb)._actions:
        if {"-o", "--out", "--output"} & set(action.option_strings):
            assert {"-o", "--out"} <= set(action.option_strings), (verb, action.option_strings)
    if verb not in NO_JSON_REPORT:
        assert json_opt is not None, verb


def test_scalars_json_path_and_out_spellings(tmp_path, capsys, demo_dir):
    rc, out, _ = _run(["scalars", str(demo_dir), "-o", str(tmp_path / "a.csv"), "--json"], capsys)
    assert rc == 0
    summary = json.loads(out)
    rc, out, _ = _run(["scalars", str(demo_dir), "--out", str(tmp_path / "a.csv"),
                       "--json", str(tmp_path / "s.json")], capsys)
    assert rc == 0 and f"-> {tmp_path / 'a.csv'}" in out          # the summary line as well
    written = json.loads((tmp_path / "s.json").read_text())
    assert {k: v for k, v in written.items() if k != "seconds"} == \
        {k: v for k, v in summary.items() if k != "seconds"}
    rc, _, _ = _run(["scalars", str(demo_dir), "--output", str(tmp_path / "b.parquet"), "-q"],
                    capsys)
    assert rc == 0 and (tmp_path / "b.parquet").stat().st_size > 0   # the older spelling


def test_footprint_reads_params_yaml_by_default(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    rc, _, err = _run(["footprint", "--manifest", "m.parquet", "--json", "f.json", "-q"], capsys)
    assert rc == 2 and _one_line(err) == "rightsize: error: params.yaml: params file not found"
