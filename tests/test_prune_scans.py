"""The prune stage's shortcuts give what the scans they replaced gave (issue 27): compared
on generated text rich in the shapes the scans look for."""

from __future__ import annotations

import json
import re
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from windowkeeper.analysis import identifiers, record, specs, toolshapes
from windowkeeper.analysis.events import ToolEvent, failed, result_exit_code, tool_event
from windowkeeper.analysis.facts import URL, dedupe, hinted_matches, window
from windowkeeper.analysis.identifiers import (
    MAX_UUIDS,
    OUTPUT_SCAN_CHARS,
    output_identifiers,
    text_identifiers,
)
from windowkeeper.analysis.shellwords import lines_of, steps_of
from windowkeeper.analysis.toolshapes import ToolAction, ToolKind, _last_exit, exit_code
from windowkeeper.core.messages import call_arguments, call_name

_HINTS = (
    identifiers._TICKET_HINT,
    identifiers._SLUG_HINT,
    identifiers._HASH_HINT,
    identifiers._UUID_HINT,
)
# Pieces that make (and nearly make) tickets, slugs, tracker hashes, UUIDs, SHAs, issue
# numbers and URLs, joined by separators that end or continue them.
_PIECES = st.sampled_from([
    "-", "--", "-1", "-a1b", "-3r6", "-10s", "-gqc.4", ".4", "ABC", "KEY", "X", "A1", "UTF",
    "spotter", "app", "a", "z9", "deadbeef", "1a2b3c4", "0f0f", "e29b", "41d4", "a716",
    "446655440000", "550e8400", "#12", "#", "https://x.io/a-1", "://", "commit ", "id: ",
    " ", "\n", ".", "_", "/", "é", "İ", "9",
])  # fmt: skip
_TEXTS = st.lists(_PIECES, max_size=60).map("".join)


@settings(max_examples=2_000, deadline=None)
@given(_TEXTS)
def test_one_scan_finds_a_hint_exactly_where_one_of_the_four_does(text: str) -> None:
    assert identifiers._hyphen_hinted(text) == any(h.search(text) for h in _HINTS)


# Runs of letters, digits, dots and hyphens (separators, flags, permissions, versions,
# dates), where the hints' runs and look-arounds are decided.
_RUNS = st.text(alphabet="abcrxz019AZ.-_ \n\u0663", max_size=80)


@settings(max_examples=3_000, deadline=None)
@given(_RUNS)
def test_one_scan_finds_a_hint_in_runs_exactly_where_one_of_the_four_does(text: str) -> None:
    assert identifiers._hyphen_hinted(text) == any(h.search(text) for h in _HINTS)


def _ungated(text: str, *, uuids: bool = False, shas: bool = True, scan: int = 4_000) -> list[str]:
    """text_identifiers as it was: every hint scanned on its own."""
    text = window(text, scan)
    found = identifiers._shas(text) if shas else identifiers._labelled_shas(text)
    if "-" in text:
        found.extend(identifiers._hyphenated(text, uuids=uuids))
    if "#" in text:
        found.extend((m.start(), m.group(0)) for m in identifiers._ISSUE.finditer(text))
    for match in identifiers.URL.finditer(text) if "://" in text else ():
        found.append((match.start(), identifiers.shorten(match.group(0).rstrip(".,;:!?*`"), 200)))
    return dedupe(value for _, value in sorted(found)) if found else []


@settings(max_examples=1_000, deadline=None)
@given(_TEXTS, st.booleans(), st.booleans())
def test_text_identifiers_match_the_ungated_scans(text: str, uuids: bool, shas: bool) -> None:
    assert text_identifiers(text, uuids=uuids, shas=shas) == _ungated(text, uuids=uuids, shas=shas)


@settings(max_examples=500, deadline=None)
@given(st.lists(_PIECES, max_size=400).map("".join))
def test_output_identifiers_match_the_ungated_scans(text: str) -> None:
    _assert_output_identifiers_ungated(text)


def _assert_output_identifiers_ungated(text: str) -> None:
    action = ToolAction("bash", ToolKind.SHELL, "make", command="make")
    event = ToolEvent(0, action, {}, text, None, False)
    output = window(text, OUTPUT_SCAN_CHARS)
    expected = _ungated(output, shas=False, scan=OUTPUT_SCAN_CHARS)
    if "-" in output:
        found = hinted_matches(identifiers._UUID, identifiers._UUID_HINT, output)
        expected.extend(dedupe(m.group(0) for m in found)[:MAX_UUIDS])
    assert output_identifiers(event) == tuple(dedupe(expected))


# Labels, separators and issue numbers in the forms the output gate must let through:
# any case, Unicode white space and digits, letters IGNORECASE folds onto ASCII ones.
_LABEL_PIECES = st.sampled_from([
    "commit", "Commit", "SHA", "sha", "Rev", "revision", "REVISION", "id", "ID", "agent_id",
    "taskid", "run_Id", "xid", "İd", "ıd", "ſha", ": ", ":", "=", "#", '"', "'", " ", "\n",
    "\t", "\x1c", "\u00a0", "\u3000", "\u2003", "1a2b3c4", "deadbeef0", "abcdef1", "1234567",
    "ABCDEF1", "#12", "#\u0661\u0662", "#x", "a", "-", "_", "é", ".",
])  # fmt: skip


@settings(max_examples=1_000, deadline=None)
@given(st.lists(_LABEL_PIECES, max_size=60).map("".join))
def test_the_output_gate_passes_every_text_its_scans_find_something_in(text: str) -> None:
    scans = identifiers._output_scans(text)
    if identifiers._labelled_shas(text):
        assert identifiers._LABELLED in scans
    if identifiers._ISSUE.search(text):
        assert identifiers._ISSUES in scans
    _assert_output_identifiers_ungated(text)


def test_the_output_gate_stops_a_text_with_neither_shape() -> None:
    if identifiers._OUTPUT_GATE is None:  # the pure-Python path: every scan runs
        assert identifiers._output_scans("ran 1234567 tests # done") == identifiers._EVERY_SCAN
    else:
        assert not identifiers._output_scans("ran 1234567 tests # done; id 12ab")
        assert identifiers._output_scans("commit: 1a2b3c4d") == {identifiers._LABELLED}


# URLs and near-URLs: the output gate's URL condition must pass every text URL matches in.
_URL_TEXTS = st.lists(
    st.sampled_from(["http://", "https://", "HTTP://", "Https://", "http:/", "://", "ftp://",
                     "file:///", "h", "ttp", "s", "x.io", "/a-1", "é", "İ", " ", "\n", "<",
                     "#7", "commit 1a2b3c4"]),
    max_size=30,
).map("".join)  # fmt: skip


@settings(max_examples=2_000, deadline=None)
@given(_URL_TEXTS)
def test_the_output_gate_passes_every_text_a_url_is_in(text: str) -> None:
    if URL.search(text):
        assert identifiers._URLS in identifiers._output_scans(text)
    _assert_output_identifiers_ungated(text)


def test_the_output_gate_stops_a_text_with_no_url_start() -> None:
    if identifiers._OUTPUT_GATE is None:  # the pure-Python path: every scan runs
        assert identifiers._URLS in identifiers._output_scans("file:///tmp/x")
    else:
        assert identifiers._URLS not in identifiers._output_scans("file:///tmp/x HTTP://x")
        assert identifiers._URLS in identifiers._output_scans("see http://x.io/a")
        assert identifiers._URLS in identifiers._output_scans("see https://x.io/a")


# Hyphenated runs in the forms the hints' gate must let through: Unicode digits and
# letters beside them, upper-case runs before a hyphen, hex groups.
_HYPHEN_TEXTS = st.lists(
    st.sampled_from(["-", "ABC", "K9", "A", "a", "z9", "9", "0f3e", ".", ".7", "\u0663", "é",
                     "_", " ", "\n", "--", "-a1b", "-10s", "x-1.2", "e29b", "Z", "İ"]),
    max_size=40,
).map("".join) | _RUNS  # fmt: skip


# Each hyphen hint with its own condition of the output gate (session 24: only the hints
# whose condition matched are scanned for).
_HINT_SCANS = (
    (identifiers._SLUG_HINT, identifiers._SLUGS),
    (identifiers._HASH_HINT, identifiers._HASHES),
    (identifiers._TICKET_HINT, identifiers._TICKETS),
    (identifiers._UUID_HINT, identifiers._UUIDS),
)


@settings(max_examples=3_000, deadline=None)
@given(_HYPHEN_TEXTS)
def test_the_output_gate_passes_every_text_a_hyphen_hint_is_in(text: str) -> None:
    scans = identifiers._output_scans(text)
    for hint, scan in _HINT_SCANS:
        if hint.search(text):
            assert scan in scans
    _assert_output_identifiers_ungated(text)


def test_the_output_gate_stops_hyphens_no_hint_follows() -> None:
    if identifiers._OUTPUT_GATE is None:  # the pure-Python path: every scan runs
        assert identifiers._output_scans("-----") >= identifiers._HYPHEN_SCANS
    else:
        text = "------\n--no-cache -rf x-y -0.5 a--b -v2 ID-x\n------"
        assert not identifiers._hyphen_hinted(text)
        assert identifiers._HYPHEN_SCANS.isdisjoint(identifiers._output_scans(text))
        assert identifiers._output_scans("see spotter-3r6") == {identifiers._HASHES}
        assert identifiers._output_scans("see ABC-12") == {identifiers._TICKETS}


_EXIT_PIECES = st.sampled_from([
    "exit 1", "exit 0", "Exit code: 2", "exited with status 3", "<returncode>4</returncode>",
    '"exit_code": 5', "returned non-zero exit status 6", "x", "\n", " ", "EXIT STATUS=7",
    "ok", "İ", "ı", "-1",
])  # fmt: skip


@settings(max_examples=1_000, deadline=None)
@given(st.lists(_EXIT_PIECES, max_size=30).map("".join), st.integers(0, 3_000))
def test_exit_code_of_a_short_result_reads_it_once(text: str, pad: int) -> None:
    result = text + " " * pad  # short and long results alike
    tail = _last_exit(result[-2000:])
    expected = tail if tail is not None else _last_exit(result[:2000])
    assert exit_code(result) == expected


def _every_pattern_on_the_text(text: str) -> int | None:
    """The last exit code of any shape, each pattern run on the text as it is."""
    found = [
        (match.start(), int(match.group(1)))
        for _, pattern, _ in toolshapes._EXIT_PATTERNS
        for match in pattern.finditer(text)
    ]
    return max(found)[1] if found else None


@settings(max_examples=2_000, deadline=None)
@given(st.lists(st.one_of(_EXIT_PIECES, st.sampled_from(["EXİT 8", "exıt 9", "ſ", "ex", "it"])),
                max_size=30).map("".join))  # fmt: skip
def test_the_last_exit_code_is_the_last_any_pattern_finds(text: str) -> None:
    assert _last_exit(text) == _every_pattern_on_the_text(text)


# ASCII pieces that start, end, nest and nearly make every shape, for the one look for
# "exit" from the end that an ASCII text takes.
_ASCII_EXIT_PIECES = st.sampled_from([
    "exit", "EXIT", "Exit", "exited", "ed", "_", " ", "  ", "code", "status", "STATUS", ":",
    "=", "-", "1", "0", "42", '"', '"exit_code"', "returned non-zero ", "returned non-zero exit",
    " status 3", "<returncode>", "</returncode>", "x", "\n", "\t", "wexit 2", "exit 7",
])  # fmt: skip


@settings(max_examples=3_000, deadline=None)
@given(st.lists(_ASCII_EXIT_PIECES, max_size=40).map("".join))
def test_the_last_exit_code_of_an_ascii_text_is_the_last_any_pattern_finds(text: str) -> None:
    assert _last_exit(text) == _every_pattern_on_the_text(text)


def _every_line_split(command: str) -> tuple[str, ...]:
    """shell_items as it was: every line of a command that passes the gate split into
    words."""
    if len(command) > 2_000 or not specs._may_look_up(command):
        return ()
    found: list[str] = []
    for line in lines_of(command)[0]:
        for tokens in steps_of(line):
            item = specs._step_item([t for t in tokens if t])
            if item is not None:
                found.append(item)
        match = specs._ISSUE_URL.search(line)
        if match and specs._FETCHER.search(line):
            found.append(match.group(0))
    return tuple(found)


# Look-ups, their verbs quoted and escaped in pieces, trackers, nouns and ids.
_COMMAND_PIECES = st.sampled_from([
    "bd ", "jira ", "gh ", "issue ", "pr ", "show", "sh'o'w", 'g"e"t', "\\get", "GET", "View",
    "read", "İnfo", "info ", "details", "describe", " ", "\t", "\n", ";", "|", "&&", "&", "12",
    "ABC-1", "#4", "x", "'", '"', "\\", "https://x.io/issues/3", "curl ", "echo ", "get_seed",
    "--json ", "# note",
])  # fmt: skip


@settings(max_examples=2_000, deadline=None)
@given(st.lists(_COMMAND_PIECES, max_size=30).map("".join))
def test_look_up_items_are_those_of_every_line_split(command: str) -> None:
    assert specs.shell_items(command) == _every_line_split(command)


_OPTIONAL_TEXT = st.none() | st.text(max_size=8)


@settings(max_examples=500, deadline=None)
@given(
    st.text(max_size=8), st.sampled_from(list(ToolKind)), st.text(max_size=8), _OPTIONAL_TEXT,
    _OPTIONAL_TEXT, _OPTIONAL_TEXT, _OPTIONAL_TEXT, st.none() | st.integers(),
)  # fmt: skip
def test_an_action_made_through_its_slots_is_the_one_its_init_makes(
    name: str, kind: ToolKind, target: str, path: str | None, command: str | None,
    pattern: str | None, url: str | None, line: int | None,
) -> None:  # fmt: skip
    made = toolshapes._action(name, kind, target, path, command, pattern, url, line)
    expected = ToolAction(name, kind, target, path, command, pattern, url, line)
    assert made == expected
    assert hash(made) == hash(expected) and repr(made) == repr(expected)


def _parsed_as_it_was(call: dict[str, Any]) -> tuple[Any, ...]:
    """parse_call as it was: recognized with the parsed arguments, then, for a shell
    with none, again with the raw text as its command."""
    name, raw = call_name(call), call_arguments(call)
    parsed = record._parsed(raw)
    args: Any = parsed if parsed is not None else {}
    action = toolshapes.classify_call(name, args)
    if not args and action.kind is ToolKind.SHELL and raw.strip():
        args = {"command": raw.strip()}
        action = toolshapes.classify_call(name, args)
    return action, parsed is not None, dict(args) if parsed is None else parsed


_TOOL_NAMES = st.sampled_from([
    "bash", "Bash", "functions.bash", "mcp__x__execute_bash", "str_replace_editor", "Read",
    "view", "run", "terminal_tool", "my_shell", "grep", "fetch", "other", "",
])  # fmt: skip
_RAW_ARGUMENTS = st.sampled_from([
    "", " ", "{}", " {} ", "[]", "ls -la", '{"command": "ls"}', '{"cmd": " "}', "null",
    '{"path": "a.py", "command": "view"}', '{"file_path": "x"}', '"ls"', "{bad", "\n",
])  # fmt: skip


@settings(max_examples=500, deadline=None)
@given(_TOOL_NAMES, _RAW_ARGUMENTS | st.text(max_size=12))
def test_a_call_is_recognized_once_as_it_was_twice(name: str, raw: str) -> None:
    call = {"id": "c", "type": "function", "function": {"name": name, "arguments": raw}}
    made = record.parse_call(call)
    action, json_object, args = _parsed_as_it_was(call)
    assert made.action == action
    assert made.json_object == json_object
    assert dict(made.args) == args


@settings(max_examples=300, deadline=None)
@given(
    st.sampled_from(["bash", "Read", "other"]),
    st.text(max_size=20),
    st.text(max_size=40),
    st.integers(0, 9),
)
def test_an_event_made_through_its_slots_is_the_one_its_init_makes(
    name: str, raw: str, output: str, position: int
) -> None:
    call = record.parse_call({"id": "c", "function": {"name": name, "arguments": raw}})
    result = record.Analyzer().facts({"role": "tool", "tool_call_id": "c", "content": output})
    made = tool_event(call, result, position)
    code = result_exit_code(result) if call.action.kind is ToolKind.SHELL else None
    expected = ToolEvent(
        position, call.action, call.args, output, code, failed(code, output), False, "c",
        result.memo,
    )  # fmt: skip
    assert made == expected and repr(made) == repr(expected)
    assert made.memo is result.memo


_KEY_NAMES = st.sampled_from(["todos", "items", "path", "command", "todo_list", "plan", "x"])


@settings(max_examples=300, deadline=None)
@given(
    st.lists(st.lists(_KEY_NAMES, unique=True, max_size=4), min_size=1, max_size=5),
    st.sampled_from(['"(?:todos|items)"', '"todo_\\w+"', '"plan"|"x"', '"none"']),
)
def test_a_key_sets_lack_is_told_as_each_key_matched_would(
    key_sets: list[list[str]], pattern: str
) -> None:
    quoted = re.compile(pattern)
    for keys in key_sets * 2:  # each asked again: remembered answers too
        arguments = record.LazyArguments(json.dumps(dict.fromkeys(keys, 1)))
        expected = not any(quoted.fullmatch(f'"{key}"') for key in keys)
        assert arguments.lacks_keys(quoted) == expected
