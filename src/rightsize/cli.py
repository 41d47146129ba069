"""The ``rightsize`` command: thin verbs over the libraries.

:data:`VERBS` names the module of every verb; each module exposes
``register(subparsers, common)`` that adds its verbs with ``set_defaults(func=...)``. A
command imports only its own verb's module (:func:`build_parser` with the verb), so a DVC
stage depends on its own verb file and editing another verb re-runs nothing; ``rightsize
--help`` and an unknown verb load them all. Verb modules import only the standard library
at module level, so ``rightsize scalars`` never pays for torch or pandas.

Exit codes: 0 ok; 1 unexpected internal error (a bug); 2 bad input (file, flag, params key,
permissions, a full disk: ``errors.NoSpaceError``, also one met outside ``rightsize.atomic``);
3 integrity failure (checksum, CRC or unreadable path under ``--strict``); 4 bad data (schema,
shape, values); 130 interrupted (SIGINT); 143 terminated (SIGTERM).
"""

from __future__ import annotations

import argparse
import importlib
import logging
import os
import signal
import sys
import textwrap
import threading
import traceback
from typing import Any, NoReturn

from rightsize import console
from rightsize.blas_kernel import pin_openblas_kernel
from rightsize.errors import NoSpaceError, RightsizeError, Terminated, is_no_space

VERBS = {                         # verb -> the module that registers it (tests check it)
    "scalars": "rightsize.verbs.scalars",
    "telemetry": "rightsize.verbs.telemetry",
    "rescue": "rightsize.verbs.telemetry",
    "verify": "rightsize.verbs.telemetry",
    "demo-run": "rightsize.verbs.telemetry",
    "cohort": "rightsize.verbs.cohort",
    "train": "rightsize.verbs.probes",
    "evaluate": "rightsize.verbs.probes",
    "missing-modality": "rightsize.verbs.probes",
    "token-cost": "rightsize.verbs.token_cost",
    "planted-ceiling": "rightsize.verbs.ceiling",
    "compare-probes": "rightsize.verbs.compare",
    "footprint": "rightsize.verbs.footprint",
    "sizing": "rightsize.verbs.sizing",
    "bench-encoder": "rightsize.verbs.bench",
    "spread": "rightsize.verbs.experiments",
    "sweep": "rightsize.verbs.experiments",
    "extract": "rightsize.verbs.extract",
    "ecg-demo": "rightsize.verbs.extract",
    "ecg-input": "rightsize.verbs.ecg_input",
    "report": "rightsize.verbs.report",
    "machine": "rightsize.verbs.machine",
    "check-params": "rightsize.verbs.check_params",
}
ALIASES = {"seeds": "spread"}     # an old verb name -> its verb (argparse aliases of it)


class _Parser(argparse.ArgumentParser):
    """argparse whose usage errors are one line, ``rightsize: error: MESSAGE``, exit 2.

    The usage block stays in ``--help``; an error argparse raises about the command line's
    shape (a missing or unknown flag) ends by naming the verb's ``--help``.
    """

    def parse_args(self, args: Any = None, namespace: Any = None) -> Any:  # type: ignore[override]
        """argparse's, with words no parser took named against the verb's ``--help``."""
        parsed, extras = self.parse_known_args(args, namespace)
        if extras:
            verb = getattr(parsed, "verb", None)
            self._fail(f"unrecognized arguments: {' '.join(extras)}",
                       f"{self.prog} {verb}" if verb else self.prog)
        return parsed

    def error(self, message: str) -> NoReturn:
        """Print the one-line error and exit 2 (``SystemExit``, as argparse does)."""
        if message.startswith("argument VERB: invalid choice: "):
            word = message.split("invalid choice: ", 1)[1].split(" (choose")[0]
            message = f"unknown verb {word}"
        self._fail(message, self.prog)

    def _fail(self, message: str, prog: str) -> NoReturn:
        if message.startswith(_SHAPE_ERRORS) or "expected one argument" in message:
            message += f" (see {prog} --help)"
        self.exit(2, f"rightsize: error: {' '.join(message.split())}\n")


# argparse's own messages about the command line's shape (Python 3.11 wording)
_SHAPE_ERRORS = ("the following arguments are required", "unrecognized arguments",
                 "one of the arguments", "ambiguous option", "unknown verb")


class _HelpFormatter(argparse.HelpFormatter):
    """Help wrapped to the terminal: prose paragraphs of a description or epilog are filled
    to its width; an indented line (an example command, a continuation) is kept as written."""

    def _fill_text(self, text: str, width: int, indent: str) -> str:
        out: list[str] = []
        prose: list[str] = []

        def flush() -> None:
            if prose:
                out.append(textwrap.fill(" ".join(prose), width, initial_indent=indent,
                                         subsequent_indent=indent, break_on_hyphens=False,
                                         break_long_words=False))   # --flags stay whole
                prose.clear()

        for line in text.splitlines():
            if line.strip() and not line[0].isspace():
                prose.append(line.strip())
            else:
                flush()
                out.append(indent + line if line.strip() else "")
        flush()
        return "\n".join(out)


def _formatter(prog: str) -> argparse.HelpFormatter:
    """:class:`_HelpFormatter` for ``prog`` with option names up to 30 columns wide."""
    return _HelpFormatter(prog, max_help_position=30)


def build_parser(verb: str | None = None) -> argparse.ArgumentParser:
    """The top-level parser: with ``verb`` (a key of :data:`VERBS` or :data:`ALIASES`), only
    that verb's module registered (and imported); otherwise every verb's."""
    # Defaults are SUPPRESSed so a verb's copy of -q/--debug never resets one given before the verb.
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--quiet", "-q", action="store_true", default=argparse.SUPPRESS,
                        help="no progress or info output")
    common.add_argument("--debug", action="store_true", default=argparse.SUPPRESS,
                        help="show tracebacks and debug logs")
    parser = _Parser(
        prog="rightsize",
        description="Measure what ML work costs and keep the answer versioned with DVC.",
        epilog="Run 'rightsize VERB --help' for a verb's flags and an example.",
        parents=[common],
        formatter_class=_formatter,
    )
    sub = parser.add_subparsers(dest="verb", metavar="VERB", parser_class=_Parser)
    verb = ALIASES.get(verb or "", verb)
    modules = [VERBS[verb]] if verb in VERBS else list(dict.fromkeys(VERBS.values()))
    for name in modules:
        importlib.import_module(name).register(sub, common)
    for verb_parser in sub.choices.values():   # one help style, whatever a verb asked for
        verb_parser.formatter_class = _formatter
    return parser


def _verb(argv: list[str]) -> str | None:
    """The verb of a command line: its first word that is not an option (the top-level
    options take no value), or None."""
    return next((word for word in argv if not word.startswith("-")), None)


def main(argv: list[str] | None = None) -> int:
    """Entry point of the ``rightsize`` console script; returns the exit code.

    The exit code depends on the error only: ``--debug`` adds the traceback above the
    one-line message and changes nothing else.
    """
    pin_openblas_kernel()          # before any verb imports numpy (see rightsize.blas_kernel)
    words = sys.argv[1:] if argv is None else argv
    parser = build_parser(_verb(words))
    try:
        args = parser.parse_args(words)
    except RightsizeError as exc:        # a path on the command line that does not exist
        print(f"rightsize: error: {exc}", file=sys.stderr)
        return exc.exit_code
    args.quiet = getattr(args, "quiet", False)
    args.debug = getattr(args, "debug", False)
    if not getattr(args, "func", None):
        parser.print_help()
        return 2
    console.configure(quiet=args.quiet, debug=args.debug)
    previous = _raise_on_sigterm()
    try:
        if getattr(args, "fill_params", None):
            args.fill_params(args)            # --params left out: params.yaml when present
        if getattr(args, "params", None) and getattr(args, "check", None) is None:
            _check_params_file(args.params)   # (cohort --check reads no params file)
        return int(args.func(args) or 0)
    except RightsizeError as exc:
        _traceback(args.debug)
        for line in exc.details:
            console.warn(line)
        print(f"rightsize: error: {exc}", file=sys.stderr)
        return exc.exit_code
    except KeyboardInterrupt:
        _traceback(args.debug)
        print("rightsize: error: interrupted", file=sys.stderr)
        return 130
    except Terminated:
        _traceback(args.debug)
        print("rightsize: error: terminated (SIGTERM)", file=sys.stderr)
        return 128 + signal.SIGTERM
    except BrokenPipeError:
        return 0
    except Exception as exc:  # noqa: BLE001 - last-resort one-line report
        _traceback(args.debug)
        if is_no_space(exc):            # a full disk met outside rightsize.atomic: exit 2
            full = NoSpaceError(getattr(exc, "filename", None) or "(file not named)")
            print(f"rightsize: error: {full}", file=sys.stderr)
            return full.exit_code
        print(f"rightsize: error: internal: {type(exc).__name__}: {exc} (rerun with --debug)",
              file=sys.stderr)
        return 1
    finally:
        if previous is not None:
            signal.signal(signal.SIGTERM, previous)


def _raise_on_sigterm() -> Any:
    """Turn SIGTERM into :class:`Terminated` (main thread only); return the old handler."""
    if threading.current_thread() is not threading.main_thread():
        return None

    def handler(signum: int, frame: Any) -> None:
        raise Terminated()

    return signal.signal(signal.SIGTERM, handler)


def _traceback(debug: bool) -> None:
    """With ``--debug``, print the traceback of the exception being handled."""
    if debug:
        traceback.print_exc(file=sys.stderr)


def _check_params_file(path: str) -> None:
    """The checks of a whole params file that every verb reading one runs first.

    ``train.probes`` decides which pipeline stages exist, so a bad list must stop whichever
    stage runs first, before it writes anything (``check_train_probes``).
    """
    from rightsize.params import load_params
    from rightsize.probe_names import check_train_probes

    check_train_probes(load_params(path))


def console_main() -> None:
    """The ``rightsize`` console script: :func:`main`, then exit without interpreter teardown.

    Every file a verb writes is complete and renamed into place before :func:`main`
    returns; what is left is CPython tearing down a few thousand modules (torch's among
    them), which takes 0.2-0.4 s per process, on every DVC stage. So flush the standard
    streams and logging, and leave with ``os._exit``. In-process callers (tests) use
    :func:`main`, which returns normally.
    """
    rc = main()
    logging.shutdown()
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):   # closed or broken pipe: nothing left to say
            pass
    os._exit(rc)


if __name__ == "__main__":
    console_main()
