"""``rightsize --help`` lists every verb on one line; each verb's help has an example."""

from __future__ import annotations

import argparse
import re

import pytest

from rightsize.cli import build_parser


def _verbs(parser: argparse.ArgumentParser) -> dict[str, tuple[str, argparse.ArgumentParser]]:
    """Registered verb -> (one-line help, its parser), read from the parser itself (an
    alias, such as ``seeds`` of ``spread``, is not a verb of its own)."""
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    helps = {a.dest: a.help for a in sub._choices_actions}
    return {name: (helps[name], p) for name, p in sub.choices.items() if name in helps}


VERBS = sorted(_verbs(build_parser()))


def _listing(text: str) -> dict[str, list[str]]:
    """The VERB block of the top-level help: verb -> the help lines printed for it."""
    lines = text.splitlines()
    start = lines.index("  VERB") + 1
    entries: dict[str, list[str]] = {}
    name = None
    for line in lines[start:]:
        if not line.strip():
            break
        if line.startswith("    ") and not line.startswith("     "):   # a verb's own line
            name, _, rest = line.strip().partition(" ")
            rest = re.sub(r"^\([^)]*\)", "", rest.strip())                # "(alias)" after it
            entries[name] = [rest.strip()] if rest.strip() else []
        else:                                                          # a help line below it
            assert name is not None, line
            entries[name].append(line.strip())
    return entries


def test_top_level_help_lists_every_verb_with_its_help_on_one_line(monkeypatch):
    monkeypatch.setenv("COLUMNS", "80")
    parser = build_parser()
    verbs = _verbs(parser)
    listing = _listing(parser.format_help())
    assert sorted(listing) == VERBS and len(VERBS) >= 14
    for name, (help_text, _) in verbs.items():
        assert listing[name] == [help_text], name      # whole, not wrapped over two lines
        assert help_text.strip() and "\n" not in help_text


@pytest.mark.parametrize("verb", VERBS)
def test_each_verb_help_has_an_example_and_the_common_flags(verb, monkeypatch):
    monkeypatch.setenv("COLUMNS", "100")
    text = _verbs(build_parser())[verb][1].format_help()
    assert "example" in text.lower()
    examples = text.lower().split("example", 1)[1]
    assert any(line.strip().startswith(f"rightsize {verb}") for line in examples.splitlines())
    assert "--quiet, -q" in text and "--debug" in text


def test_the_verb_table_names_the_module_that_registers_each_verb():
    # rightsize.cli.VERBS is what a command imports: its verb's module alone
    from rightsize.cli import VERBS as TABLE

    assert sorted(TABLE) == VERBS
    for verb, module in TABLE.items():
        only = _verbs(build_parser(verb))
        assert verb in only, verb
        assert only[verb][1].get_default("func").__module__ == module, verb


def test_seeds_is_an_alias_of_spread():
    # `rightsize seeds` (the old name) still runs spread's handler, importing its module alone
    from rightsize.cli import ALIASES
    from rightsize.cli import VERBS as TABLE

    assert ALIASES == {"seeds": "spread"}
    sub = next(a for a in build_parser("seeds")._actions
               if isinstance(a, argparse._SubParsersAction))
    assert sub.choices["seeds"] is sub.choices["spread"]
    assert sub.choices["seeds"].get_default("func").__module__ == TABLE["spread"]
    assert "old name" in sub.choices["spread"].format_help()
