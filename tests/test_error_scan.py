"""The error-line gate (one Hyperscan pass, or lower-cased finds on the pure-Python path)
finds exactly the lines the error-line pattern matches, in any text."""

from __future__ import annotations

import os

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from windowkeeper.analysis import outputs
from windowkeeper.core.hint_scan import FORCE_PURE_PYTHON

_PIECES = [
    " ", "\n", "\t", ":", ".", "x", "é", "😀", "😀😀😀😀😀😀", "ı", "ſ", "İ", "\u212a", "\u0307",
    "Error", "ERROR", "eRRor", "error: x", "Fatal: y", "FAIL", "fail: z", "Traceback",
    "E   assert 1", "E\tx",
    "npm ERR! x", "NPM error", "bash: x: command not found", "SH: ", "** (Foo) x",
    "Caused by: y", "CAUSED BY: ", "--- FAIL: t", "ValueError: bad", "a.py:3: error: no",
    "panic: p", "PANIC", "exception", "Exception in thread x", "e  ", "e \t",
]  # fmt: skip


def _every_line(text: str) -> list[str]:
    return [m.group(1) for m in outputs._ERROR_LINE.finditer("\n" + text)]


@settings(max_examples=500, deadline=None)
@given(st.lists(st.sampled_from(_PIECES), max_size=40).map("".join))
def test_gated_matches_are_every_matching_line(text: str) -> None:
    assert [m.group(1) for m in outputs._error_matches(text)] == _every_line(text)


@pytest.mark.parametrize(
    "text",
    [
        "😀 line\nValueError: bad\n  error: two😀\nok",
        "ERROR x\u0307\nValueError: y",  # a combining dot: folding moves characters
        "İ\nfatal: z",
        "Error",
        "",
        "\n\nnpm ERR! x",
        "😀" * 8 + "\nerror: x\nok\nfine\nmore lines here",  # byte and character offsets differ
    ],
)
def test_examples(text: str) -> None:
    assert [m.group(1) for m in outputs._error_matches(text)] == _every_line(text)


@pytest.mark.parametrize("fold", ["İ", "K", "\u0307"])
def test_long_texts_lowered_in_pieces(fold: str) -> None:
    lines = [f"{fold} line {n} " + "é" * (n % 90) for n in range(400)]
    for n in (0, 17, 150, 151, 399):
        lines[n] = f"ValueError: number {n}" if n % 2 else f"npm ERR! {n}"
    text = "\n".join(lines)
    assert len(text) > 8 * outputs._PROBE_CHARS
    assert [m.group(1) for m in outputs._error_matches(text)] == _every_line(text)
    assert len(outputs._error_matches(text)) == 5 or fold == "\u0307"


def test_the_scan_runs_unless_forced_off() -> None:
    forced = os.environ.get(FORCE_PURE_PYTHON, "") not in ("", "0")
    assert (outputs._ERROR_SCAN is None) == (forced or outputs.literal_scanner(["x"]) is None)
