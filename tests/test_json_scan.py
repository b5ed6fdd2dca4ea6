"""loads_or_none's direct scan gives what json.loads gives (issue 27): the same value,
or None where json.loads raises."""

from __future__ import annotations

import json

from hypothesis import given, settings
from hypothesis import strategies as st

from windowkeeper.core.jsonsafe import loads_or_none

_JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=5), inner),
    max_leaves=12,
).map(json.dumps)
# Pieces around a JSON text: whitespace on either side, a byte order mark, extra data,
# the constants json takes beyond the standard, broken brackets and strings.
_EDGES = st.sampled_from([
    "", " ", "\n", "\t", "\r", "\ufeff", "x", "{", "}", "]", ",", '"', "NaN", "-Infinity",
    "\u00a0", "\u2028", "1", "//", "\\",
])  # fmt: skip


def _reference(text: str) -> object:
    try:
        return ("ok", json.loads(text))
    except (ValueError, RecursionError):
        return ("none", None)


def _same(got: object, text: str) -> bool:
    kind, expected = _reference(text)  # type: ignore[misc]
    if kind == "none":
        return got is None
    # NaN is the one value unequal to itself: compare the texts json writes of both.
    return json.dumps(got) == json.dumps(expected) and (got == expected or _has_nan(expected))


def _has_nan(value: object) -> bool:
    return "NaN" in json.dumps(value)


@settings(max_examples=1_500, deadline=None)
@given(_EDGES, _JSON, _EDGES)
def test_a_json_text_parses_as_json_loads_parses_it(before: str, text: str, after: str) -> None:
    whole = before + text + after
    assert _same(loads_or_none(whole), whole)


@settings(max_examples=1_500, deadline=None)
@given(st.lists(_EDGES, max_size=8).map("".join))
def test_a_broken_text_is_none_where_json_loads_raises(text: str) -> None:
    assert _same(loads_or_none(text), text)
