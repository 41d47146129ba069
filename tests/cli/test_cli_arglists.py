"""The verbs' one comma-list parser (rightsize.verbs.arglists)."""

from __future__ import annotations

import argparse

import pytest

from rightsize.errors import InputError
from rightsize.verbs.arglists import int_list, int_list_type


def test_items_blanks_and_empty():
    assert int_list("1,5, 12", "--epochs") == (1, 5, 12)
    assert int_list("1,,2,", "--epochs") == (1, 2)
    assert int_list("", "--epochs") == ()


@pytest.mark.parametrize(("text", "kwargs", "needle"), [
    ("1,x", {}, "--x: expected comma-separated integers, got '1,x'"),
    ("1,0", {"minimum": 1}, "--x: expected comma-separated integers >= 1, got '1,0'"),
    ("2,3,2", {"unique": True}, "--x: duplicate values in '2,3,2'"),
])
def test_bad_lists_name_the_flag(text, kwargs, needle):
    with pytest.raises(InputError) as exc:
        int_list(text, "--x", **kwargs)
    assert str(exc.value) == needle


def test_argparse_type_turns_errors_into_usage_errors():
    parse = int_list_type(minimum=1)
    assert parse("1,5") == (1, 5)
    with pytest.raises(argparse.ArgumentTypeError, match="integers >= 1, got '0'"):
        parse("0")
