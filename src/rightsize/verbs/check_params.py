"""Verb: check-params (params.yaml and what dvc.yaml puts on command lines, before any stage)."""

from __future__ import annotations

import argparse

from rightsize import console

_EPILOG = """\
example:
  rightsize check-params --params params.yaml --dvc-yaml dvc.yaml --json metrics/stage_values.json

DVC substitutes params values into stage commands before any rightsize code runs; the
`stage_values` stage runs first (the stages whose commands substitute depend on its output),
so a value with a single quote or a control character stops `dvc repro` there, exit 2 naming
its key, and no stage command is run with it.
"""


def register(sub: argparse._SubParsersAction, common: argparse.ArgumentParser) -> None:
    """Add the ``check-params`` verb to the rightsize parser."""
    cp = sub.add_parser(
        "check-params", parents=[common], help="check params.yaml and what dvc.yaml puts on "
                                               "command lines",
        description="Read params.yaml (unknown blocks, duplicate keys, run names) and check "
                    "every value dvc.yaml substitutes into a stage command: one that could end "
                    "its quoting is exit 2 naming the key.",
        epilog=_EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    cp.add_argument("--params", default="params.yaml", help="params file (default params.yaml)")
    cp.add_argument("--dvc-yaml", default="dvc.yaml", help="pipeline file (default dvc.yaml)")
    cp.add_argument("--json", help="write what was checked as JSON ('-' for stdout)")
    cp.set_defaults(func=run_check_params)


def run_check_params(args: argparse.Namespace) -> int:
    """``rightsize check-params``: exit 2 naming the first unsafe value."""
    from pathlib import Path

    import yaml

    from rightsize.atomic import check_writable
    from rightsize.errors import InputError
    from rightsize.params import load_params
    from rightsize.stage_values import check_substitutions

    check_writable(args.json)
    params = load_params(args.params)
    path = Path(args.dvc_yaml)
    try:
        pipeline = yaml.safe_load(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise InputError(f"{path}: cannot read ({exc.strerror or exc})") from None
    except yaml.YAMLError as exc:
        raise InputError(f"{path}: not valid YAML: {str(exc).splitlines()[0]}") from None
    if not isinstance(pipeline, dict):
        raise InputError(f"{path}: top level must be a mapping")
    count = check_substitutions(pipeline, params)
    if args.json:   # constant: the stages that depend on it must not re-run when it passes
        console.emit_json(args.json, {"checked": "every value dvc.yaml substitutes into a "
                                                 "stage command", "ok": True})
    console.info(f"{args.params}: {count} values substituted into stage commands, all safe")
    return 0
