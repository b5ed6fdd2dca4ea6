"""JSON that can never blow the stack: bounded parsing, iterative depth checks and dumps.

Python's ``json`` and every recursive walk over parsed values fail with ``RecursionError``
somewhere near 1,000 levels (fewer when the caller's stack is already deep), and a number
literal longer than 4,300 digits is a ``ValueError`` that is not a ``JSONDecodeError``.
Input crosses into windowkeeper through the helpers here, so the rest of the package may
assume a bounded depth:

* :data:`MAX_JSON_DEPTH` is the documented limit: arrays and objects nested more than
  100 levels deep in one message (or one JSON text) are refused at parse time with one
  line naming where and the limit (:func:`loads`, :func:`check_depth`); so is an integer
  literal longer than :data:`MAX_INT_DIGITS`.
* Tool-call arguments are text the model wrote; arguments nested deeper than the limit are
  treated as non-JSON text (:func:`loads_or_none` returns ``None``), never parsed.
* :func:`dumps` serializes like ``json.dumps`` and falls back to an iterative encoder for
  values deeper than the C encoder can take (a library caller may pass any dict).

Every function here is iterative; none raises ``RecursionError``.
"""

from __future__ import annotations

import json
import re
import sys
from collections.abc import Callable, Iterator, Mapping, Set
from typing import Any

from .errors import InvalidMessagesError

MAX_JSON_DEPTH = 100
"""Deepest nesting of arrays/objects accepted in one message or one JSON text."""

MAX_INT_DIGITS = sys.get_int_max_str_digits() or 4300
"""Longest integer literal Python converts (``sys.set_int_max_str_digits``)."""

DOCUMENT_DEPTH = MAX_JSON_DEPTH + 2
"""The limit for a whole document (a JSON array of messages, or a body with ``messages``):
the wrapper's own levels on top of one message's."""


def one_of(value: object, names: Set[str]) -> bool:
    """``value in names`` for a parsed value: a list or an object there (hostile or broken
    input) is simply not one of the names, where ``in`` on a set would raise ``TypeError``."""
    return isinstance(value, str) and value in names


def depth_defect(limit: int = MAX_JSON_DEPTH) -> str:
    return f"nested deeper than {limit} levels (the limit for arrays and objects)"


def loads(text: str | bytes, where: str | None = None, *, limit: int = MAX_JSON_DEPTH) -> Any:
    """Parse one JSON text or raise :class:`InvalidMessagesError` naming ``where``.

    Refuses, in one line each: bad JSON, nesting deeper than ``limit``, and integer
    literals longer than :data:`MAX_INT_DIGITS`. Without ``where`` (a whole file) the
    error names the line.
    """
    shown = min(limit, MAX_JSON_DEPTH)  # a document's extra levels are its wrapper's
    if isinstance(text, bytes):
        try:
            text = text.decode("utf-8")
        except UnicodeDecodeError:
            raise InvalidMessagesError(where or "input", "not UTF-8 text") from None
    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        raise InvalidMessagesError(where or f"line {exc.lineno}", f"bad JSON: {exc.msg}") from None
    except RecursionError:  # the C parser gives up near the interpreter's limit
        raise InvalidMessagesError(where or _deep_line(text, limit), depth_defect(shown)) from None
    except ValueError as exc:
        raise InvalidMessagesError(where or "input", _value_defect(exc)) from None
    if value_depth_exceeds(value, limit):
        raise InvalidMessagesError(where or _deep_line(text, limit), depth_defect(shown))
    return value


# A string literal (an unterminated one runs to the end, so the scan stays linear) or a
# bracket: the only structure a JSON text has.
_TOKEN = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"?|[\[\]{}]', re.DOTALL)


def _deep_line(text: str, limit: int) -> str:
    """``line N`` where the text first nests deeper than ``limit`` (for error messages)."""
    depth = 0
    for match in _TOKEN.finditer(text):
        token = match.group()
        depth += 1 if token in "[{" else -1 if token in "]}" else 0
        if depth > limit:
            return f"line {text.count(chr(10), 0, match.start()) + 1}"
    return "input"


def _value_defect(exc: ValueError) -> str:
    if "integer string conversion" in str(exc):
        return (
            f"a number literal longer than {MAX_INT_DIGITS:,} digits (the limit for "
            "integers); quote it as a string"
        )
    return f"bad JSON: {' '.join(str(exc).split())[:120]}"


def loads_or_none(text: str, *, limit: int = MAX_JSON_DEPTH) -> Any:
    """The parsed JSON, or ``None`` for text that is not JSON, nests deeper than ``limit``
    or holds a number too long to convert.

    For tool-call arguments and other model-written text that is used only when it parses.
    """
    try:
        value = _parse(text)
    except (ValueError, RecursionError):
        return None
    # Each level of nesting takes an opening and a closing bracket: a text shorter than
    # twice the limit plus one level cannot nest deeper (most arguments are short).
    if len(text) < 2 * (limit + 1):
        return value
    return None if value_depth_exceeds(value, limit) else value


# ``json.loads`` of a str is its default decoder's ``decode``: a check for a byte order
# mark, a whitespace match on each side and the C scanner from the first value
# character, through three Python frames (most tool-call arguments are short: those
# steps were a third of parsing them). A text that neither opens nor ends with JSON
# whitespace goes to the scanner directly, which gives the same value or fails where
# ``loads`` does (a mark, no value, extra data after it: ``None`` alike).
_SCAN: Callable[[str, int], tuple[Any, int]] = json.JSONDecoder().scan_once  # type: ignore[attr-defined]
_WHITESPACE = frozenset(" \t\n\r")


def _parse(text: str) -> Any:
    """``json.loads(text)``, raising a ``ValueError`` (or ``RecursionError``) where it does."""
    if not isinstance(text, str) or not text or text[0] in _WHITESPACE or text[-1] in _WHITESPACE:
        return json.loads(text)
    try:
        value, end = _SCAN(text, 0)
    except StopIteration:
        raise ValueError("no JSON value") from None
    if end != len(text):
        raise ValueError("extra data after the JSON value")
    return value


_CONTAINERS = (dict, list, tuple)


def value_depth_exceeds(value: object, limit: int = MAX_JSON_DEPTH) -> bool:
    """True when dicts/lists/tuples inside ``value`` nest more than ``limit`` levels.

    Iterative, one level at a time; only containers are visited, so a message of strings
    costs one step.
    """
    if not isinstance(value, _CONTAINERS):
        return False
    level: list[Any] = [value]
    depth = 1
    while level:
        if depth > limit:
            return True
        below: list[Any] = []
        for item in level:
            for child in item.values() if isinstance(item, dict) else item:
                if isinstance(child, _CONTAINERS):
                    below.append(child)
        level = below
        depth += 1
    return False


def check_depth(value: object, where: str, *, limit: int = MAX_JSON_DEPTH) -> None:
    """Raise :class:`InvalidMessagesError` when ``value`` nests more than ``limit`` levels."""
    if value_depth_exceeds(value, limit):
        raise InvalidMessagesError(where, depth_defect(limit))


# --- serializing ----------------------------------------------------------------------


def dumps(
    value: object,
    *,
    ensure_ascii: bool = True,
    separators: tuple[str, str] | None = None,
    default: Callable[[Any], Any] | None = None,
) -> str:
    """``json.dumps(value, ...)`` that also serializes values nested beyond the C
    encoder's recursion limit (same text: compact or default separators, no indent)."""
    try:
        return json.dumps(value, ensure_ascii=ensure_ascii, separators=separators, default=default)
    except RecursionError:
        return _dumps_iterative(value, ensure_ascii, separators or (", ", ": "), default)


def _dumps_iterative(
    value: object,
    ensure_ascii: bool,
    separators: tuple[str, str],
    default: Callable[[Any], Any] | None,
) -> str:
    item_sep, key_sep = separators
    out: list[str] = []
    # Each frame: the open iterator of a container and whether it is a dict.
    stack: list[tuple[Iterator[Any], bool, list[bool]]] = []

    def open_item(item: object) -> None:
        while True:
            text = _scalar(item, ensure_ascii)
            if text is not None:
                out.append(text)
                return
            if isinstance(item, Mapping):
                out.append("{")
                stack.append((iter(item.items()), True, [True]))
                return
            if isinstance(item, list | tuple):
                out.append("[")
                stack.append((iter(item), False, [True]))
                return
            if default is None:
                raise TypeError(f"Object of type {type(item).__name__} is not JSON serializable")
            item = default(item)

    open_item(value)
    while stack:
        iterator, is_dict, first = stack[-1]
        try:
            element = next(iterator)
        except StopIteration:
            stack.pop()
            out.append("}" if is_dict else "]")
            continue
        if not first[0]:
            out.append(item_sep)
        first[0] = False
        if is_dict:
            key, element = element
            out.append(json.dumps(_key(key), ensure_ascii=ensure_ascii) + key_sep)
        open_item(element)
    return "".join(out)


def _scalar(item: object, ensure_ascii: bool) -> str | None:
    if item is None or isinstance(item, str | int | float):
        return json.dumps(item, ensure_ascii=ensure_ascii)
    return None


def _key(key: object) -> str:
    """A dict key as ``json.dumps`` writes it."""
    if isinstance(key, str):
        return key
    if key is None or isinstance(key, bool | int | float):
        return json.dumps(key)
    raise TypeError(f"keys must be str, int, float, bool or None, not {type(key).__name__}")
