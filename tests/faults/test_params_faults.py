"""params.yaml that would hang or escape: a YAML alias bomb fails at once (item 8); run names
that are not plain file names exit 2 at params parse, and the Markdown report escapes the
text it embeds (item 9)."""

from __future__ import annotations

import pytest
from fault_helpers import rightsize

BOMB_LEVELS = 9      # 9 ** 9 = 387 million nodes once expanded: main never finished


def alias_bomb(levels: int = BOMB_LEVELS) -> str:
    """A params file whose ``report`` block nests ``levels`` aliases, 9 copies each."""
    lines = ["report:", '  l0: &l0 ["x", "x", "x", "x", "x", "x", "x", "x", "x"]']
    for i in range(1, levels):
        refs = ", ".join([f"*l{i - 1}"] * 9)
        lines.append(f"  l{i}: &l{i} [{refs}]")
    return "\n".join(lines) + "\n"


@pytest.mark.parametrize("verb", [["report", "--metrics", "m", "--out", "r"],
                                  ["telemetry", "run", "--run", "x"]])
def test_a_params_alias_bomb_is_refused_at_once(verb, sandbox):
    (sandbox / "params.yaml").write_text(alias_bomb())
    res = rightsize([*verb, "--params", sandbox / "params.yaml"], cwd=sandbox, timeout=15)
    assert res.rc == 2, res.err
    assert res.error_line() == (f"rightsize: error: {sandbox / 'params.yaml'}:3: YAML alias "
                                "*l0 is not allowed in a params file; write the value out "
                                "in full")


RUN = "      train_records: 100\n      global_batch: 5\n"


@pytest.mark.parametrize("name", ["../../pwn", "<script>alert(1)</script>", ".hidden", "a b"])
def test_run_names_that_are_not_file_names_exit_2_at_params_parse(name, sandbox):
    (sandbox / "params.yaml").write_text(f'telemetry:\n  runs:\n    "{name}":\n{RUN}')
    (sandbox / "metrics").mkdir()
    for verb in (["report", "--metrics", "metrics", "--out", "reports/out"],
                 ["telemetry", "run", "--run", name]):
        res = rightsize([*verb, "--params", "params.yaml"], cwd=sandbox)
        assert res.rc == 2, res.err
        assert res.error_line() == (
            f"rightsize: error: params.yaml: telemetry.runs: run name {name!r} must be "
            "letters, digits, '.', '_' or '-' (not starting with '.'); it becomes file names")
    assert sorted(p.name for p in sandbox.iterdir()) == ["metrics", "params.yaml"]


def test_plain_run_names_pass(sandbox):
    (sandbox / "params.yaml").write_text(f"telemetry:\n  runs:\n    rampnet_2.stage-1:\n{RUN}")
    (sandbox / "metrics").mkdir()
    res = rightsize(["report", "--params", "params.yaml", "--metrics", "metrics",
                     "--out", "reports"], cwd=sandbox)
    assert res.rc == 0, res.err


def test_markdown_report_escapes_embedded_html():
    from rightsize.reporting.doc import Bullets, Heading, Note, Para, Table, VerdictItem
    from rightsize.reporting.render_md import render_markdown

    evil = "<script>alert(1)</script>"
    md = render_markdown([Heading(f"Run {evil}"), Para(evil), Note(evil), Bullets((evil,)),
                          Table(("run",), ((evil,),), evil), VerdictItem(evil, evil)])
    assert "<script" not in md and "<" not in md
    assert md.count("&lt;script>alert(1)&lt;/script>") == 8
