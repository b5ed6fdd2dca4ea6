"""Gates of the prune tier's per-stub work (issue 27), each against the code it replaced:
a call's recognition skips the look-ups of path and command keys a plain dict of
arguments does not hold, and the look-up verbs are found in one regex search."""

from __future__ import annotations

from types import MappingProxyType
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from windowkeeper.analysis import specs
from windowkeeper.analysis.toolshapes import _COMMAND_KEYS, PATH_KEYS, classify_call

_KEYS = st.sampled_from([*PATH_KEYS, *_COMMAND_KEYS, "pattern", "url", "view_range", "x", ""])
_VALUES = st.one_of(
    st.none(),
    st.text(max_size=12),
    st.sampled_from(["view", "create", " ", "ls -la", "/a/b.py"]),
    st.lists(st.text(max_size=5), max_size=2),
    st.integers(-2, 3),
)
_NAMES = st.sampled_from(
    ["bash", "str_replace_editor", "Read", "read_file", "grep", "web_fetch", "my_shell_tool",
     "mcp__fs__read_file", "edit", "other", "fetch_url"]
)  # fmt: skip


@settings(max_examples=500, deadline=None)
@given(_NAMES, st.dictionaries(_KEYS, _VALUES, max_size=4))
def test_a_plain_dict_is_recognized_as_any_mapping_of_it(name: str, args: dict[str, Any]) -> None:
    # A mapping that is not a dict takes the look-up per key (the code the gate skips).
    assert classify_call(name, args) == classify_call(name, MappingProxyType(args))


def test_the_gate_is_taken_for_a_dict_without_the_keys() -> None:
    # Only the key sets' answer is read: a dict subclass whose get lies takes the
    # per-key path, a plain dict of other keys never asks get at all.
    class Lying(dict[str, Any]):
        def get(self, key: str, default: Any = None) -> Any:
            return "/etc/passwd" if key == "path" else default

    assert classify_call("read_file", Lying(x=1)).path == "/etc/passwd"
    assert classify_call("read_file", {"x": 1}).path is None
    assert classify_call("bash", {"cmd": "ls"}).command == "ls"


_WORDS = st.sampled_from(
    ["show", "view", "get", "describe", "info", "read", "display", "details", "gh", "issue",
     "SHOW", "Views", "getter", "in", "fo", "://", "'", '"', "\\", "-", " ", "\n", "x"]
)  # fmt: skip


@settings(max_examples=500, deadline=None)
@given(st.lists(_WORDS, max_size=8).map("".join))
def test_the_verb_gates_find_what_a_substring_search_per_verb_finds(command: str) -> None:
    text = command.lower()
    per_verb = "://" in text or any(f" {verb}" in text for verb in specs._VERBS)
    assert specs._may_look_up(command) == per_verb
    unquoted = text.translate(specs._UNQUOTE)
    assert specs._may_hold_verb(command) == any(verb in unquoted for verb in specs._VERBS)
