"""The extraction's shortcuts agree with the plain computations they stand in for.

The handoff's extraction reads fewer events or fewer texts than a plain pass would (the
newest entries only, literal gates in front of patterns, a fact computed once per event);
each property here builds the same events twice and compares the shortcut with the
straightforward computation on one copy each.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from windowkeeper.analysis import checks, probes, resolution, specexcerpt, writers
from windowkeeper.analysis.changes import edit_change
from windowkeeper.analysis.events import ToolEvent
from windowkeeper.analysis.facts import caseless_search, collapse, dedupe
from windowkeeper.analysis.outputs import is_test_command
from windowkeeper.analysis.record import LazyArguments
from windowkeeper.analysis.resolution import segments, turned_down
from windowkeeper.analysis.todos import TodoItem, event_todos, todo_items
from windowkeeper.analysis.toolshapes import ToolAction, ToolKind
from windowkeeper.summary.handoff import decide, fixes, items, plans, progress, users, work
from windowkeeper.summary.handoff.progress import MAX_CHANGES, newest_changes

_PATHS = ["/w/a.py", "/w/b.py", "src/c.py", "x" * 130]
_LINES = ["", "x = 1", "x = 2", "# note", "return y", "def f():", "    pass", "}"]
_text = st.lists(st.sampled_from(_LINES), max_size=4).map("\n".join)


@st.composite
def _edit(draw: st.DrawFn) -> Callable[[int], ToolEvent]:
    """An event maker (fresh memo on each call): an edit, a ``sed -i``, or a read."""
    path = draw(st.sampled_from(_PATHS))
    failed = draw(st.booleans()) and draw(st.booleans())
    shape = draw(st.sampled_from(["edit", "sed", "read"]))
    if shape == "edit":
        args: dict[str, Any] = {"path": path, "old_str": draw(_text), "new_str": draw(_text)}
        action = ToolAction("str_replace", ToolKind.EDIT, path, path=path)
    elif shape == "sed":
        old, new = draw(st.sampled_from(["a", "b", "x"])), draw(st.sampled_from(["a", "c"]))
        command = f"sed -i 's/{old}/{new}/' {path}"
        args, action = (
            {"command": command},
            ToolAction("bash", ToolKind.SHELL, command, command=command),
        )
    else:
        args, action = {"path": path}, ToolAction("read", ToolKind.READ, path, path=path)

    def make(position: int) -> ToolEvent:
        return ToolEvent(position, action, args, "ok", 1 if failed else None, failed)

    return make


_previous = st.lists(
    st.sampled_from(["a.py: `x` → `y`", "b.py: added `z`", "/w/a.py: `x = 1` → `x = 2`"])
)


@settings(max_examples=300, deadline=None)
@given(st.lists(_edit(), max_size=12), _previous)
def test_newest_changes_match_a_gist_of_every_edit(
    makers: list[Callable[[int], ToolEvent]], previous: list[str]
) -> None:
    events = [make(i) for i, make in enumerate(makers)]
    plain = [make(i) for i, make in enumerate(makers)]
    changes = filter(None, (edit_change(e) for e in plain))
    found = [f"{collapse(path, 120)}: {gist}" for path, gist in changes]
    expected = tuple(dedupe([*previous, *found], keep_last=True)[-MAX_CHANGES:])
    assert newest_changes(events, previous) == expected


# --- todo lists --------------------------------------------------------------------------

_KEYS = ["todos", "plan", "steps", "items", "command", "todo", "state", "text", "stepsX"]
_entry = st.fixed_dictionaries(
    {},
    optional={
        "content": st.sampled_from(["Fix it", 'Run "tests"']),
        "status": st.sampled_from(["done", "pending", "x"]),
    },
)
_value = st.one_of(st.lists(_entry, max_size=3), st.sampled_from(["", "plan", '"todos"', 3]))
_arguments = st.dictionaries(st.sampled_from(_KEYS), _value, max_size=4)


@settings(max_examples=400, deadline=None)
@given(_arguments, st.booleans(), st.sampled_from([None, 2]), st.booleans())
def test_todo_items_of_unparsed_arguments_match_the_parsed(
    args: dict[str, Any], ascii_only: bool, indent: int | None, escaped_key: bool
) -> None:
    raw = json.dumps(args, ensure_ascii=ascii_only, indent=indent)
    if escaped_key:  # a key spelled with an escape is found only by a parse
        raw = raw.replace('"todos"', '"\\u0074odos"')
    assert todo_items("TodoWrite", LazyArguments(raw)) == todo_items("TodoWrite", json.loads(raw))


def test_event_todos_are_remembered_per_arguments() -> None:
    """An event's memo is its result's, shared by the event of the call's masked copy:
    each set of arguments gets its own items."""
    action = ToolAction("TodoWrite", ToolKind.OTHER, "todos")
    listed = {"todos": [{"content": "Fix the parser", "status": "pending"}]}
    masked = {"todos": [{"content": "Fix the [REDACTED]", "status": "pending"}]}
    first = ToolEvent(0, action, listed, "ok", None, False)
    second = ToolEvent(0, action, masked, "ok", None, False, memo=first.memo)
    assert event_todos(first) == [TodoItem("Fix the parser", "pending")]
    assert event_todos(second) == [TodoItem("Fix the [REDACTED]", "pending")]
    assert event_todos(first) is event_todos(first)


@settings(max_examples=200, deadline=None)
@given(_arguments, st.booleans())
def test_event_todos_keep_a_memo_entry_only_for_arguments_naming_a_list(
    args: dict[str, Any], ascii_only: bool
) -> None:
    """Arguments not yet parsed that name no list key answer ``None`` from their keys,
    with no memo entry kept for the compaction; the others are remembered as before."""
    raw = json.dumps(args, ensure_ascii=ascii_only)
    action = ToolAction("TodoWrite", ToolKind.OTHER, "todos")
    event = ToolEvent(0, action, LazyArguments(raw), "ok", None, False)
    assert event_todos(event) == todo_items("TodoWrite", json.loads(raw))
    names_a_list = any(key in ("todos", "plan", "steps", "items") for key in args)
    assert ("todos" in event.memo) is names_a_list


# --- check kinds ---------------------------------------------------------------------------

# Every program the lint and build patterns name (listed here, not taken from the gates),
# and words that look like one.
_PROGRAMS = [
    "mix", "ruff", "flake8", "pylint", "mypy", "pyright", "black", "isort", "eslint",
    "prettier", "rubocop", "golangci-lint", "go", "cargo", "shellcheck", "tsc", "stylelint",
    "hadolint", "biome", "make", "npm", "yarn", "pnpm", "mvn", "gradle", "gradlew", "dotnet",
    "cmake", "python", "vite", "webpack", "next", "python3", "xmypy", "make.", "go-vet",
    "pytest", "echo", "nohup", "cd", "./make",
]  # fmt: skip
_ARGUMENTS = [
    "", "check", "lint", "vet", "build", "--check", "--noEmit", "clippy", "fmt --check",
    "credo", "dialyzer", "format --check-formatted", "compile", "run build", "-m build",
    "--build", "clean package", "package", "all", "-n", "--dry-run", "x.py", "2>&1",
    "> /dev/null", "| tail -5", "&",
]  # fmt: skip
_SPACES = [" ", "  ", "\t", "\u00a0", "\x1c"]
_step = st.builds(
    lambda program, space, argument: f"{program}{space}{argument}",
    st.sampled_from(_PROGRAMS),
    st.sampled_from(_SPACES),
    st.sampled_from(_ARGUMENTS),
)
_commands = st.lists(
    st.tuples(_step, st.sampled_from([" && ", " || ", "; ", " | ", "\n", "&&", " & "])),
    min_size=1,
    max_size=4,
).map(lambda steps: "".join(step + operator for step, operator in steps))


def _plain_check_kind(command: str) -> str | None:
    """``check_kind`` as it was before the program-word gates."""
    head = command[:2_000]
    if checks._runs_in_background(head):
        return None
    if is_test_command(head) or ("django" in head and checks._MORE_TESTS.search(head)):
        return "tests"
    for step in reversed([checks._strip(s) for s in segments(head)]):
        if checks._LINT.search(" " + step):
            return "lint"
        if checks._BUILD.search(" " + step) and not step.startswith(("make -n", "make --dry")):
            return "build"
    return None


@settings(max_examples=600, deadline=None)
@given(_commands)
def test_check_kind_matches_the_plain_patterns(command: str) -> None:
    assert checks.check_kind(command) == _plain_check_kind(command)


def test_check_kind_matches_the_plain_patterns_on_every_program_and_argument() -> None:
    for program in _PROGRAMS:
        for argument in _ARGUMENTS:
            for command in (f"{program} {argument}", f"cd /w && {program}\t{argument} | tail"):
                assert checks.check_kind(command) == _plain_check_kind(command), command


# --- probes and turned-down calls ----------------------------------------------------------

_PROBE_PIECES = [
    " ", "\t", "\n", "|", ";", "&", "(", "python", "python3", "python3.11", "node", "ruby",
    "perl", "php", "pyth", "-c", "-e", "-", "'print(1)'", "open(", "'w'", "> out", "2>&1",
    "pytest", "cat f", "xnode",
]  # fmt: skip
_probes = st.lists(st.sampled_from(_PROBE_PIECES), max_size=10).map("".join)


def _plain_is_probe(command: str) -> bool:
    head = command[:2_000]
    if not probes._INLINE.search(head) or is_test_command(head) or ">" in head.replace("2>&1", ""):
        return False
    return "open(" not in head or ("'w'" not in head and '"w"' not in head)


@settings(max_examples=500, deadline=None)
@given(st.one_of(_probes, _probes.map(lambda c: c.replace(" ", " "))))
def test_is_probe_matches_the_plain_pattern(command: str) -> None:
    assert probes.is_probe(command) == _plain_is_probe(command)


def test_is_probe_matches_the_plain_pattern_on_every_interpreter() -> None:
    for program in ("python", "python3.11", "node", "ruby", "perl", "php", "xnode", "Python"):
        for flag in ("-c", "-e", "-", "-x", ""):
            for before in ("", "cat f | ", "cd /w;", "(", "echo "):
                command = f"{before}{program} {flag} 'print(1)'"
                assert probes.is_probe(command) == _plain_is_probe(command), command


_REFUSALS = [
    " ", "\n", "The ", "user", "USER", "uſer", "Uſer", "doesn't", "does not", "want to proceed",
    "rejected", "denied", "declined", "by", "the", "tool", "call", "request", "command", "x",
    "İ", "\u212a", "ok", "WANT", "wAnt", "denıed", "DENİED", "Declined", "reJected", "de\u0307nied",
]  # fmt: skip


@settings(max_examples=500, deadline=None)
@given(st.lists(st.sampled_from(_REFUSALS), max_size=10).map(" ".join))
def test_turned_down_matches_the_plain_pattern(result: str) -> None:
    action = ToolAction("bash", ToolKind.SHELL, "ls", command="ls")
    event = ToolEvent(0, action, {"command": "ls"}, result, 1, True)
    first = result[:400].lstrip().split("\n", 1)[0]
    assert turned_down(event) == (resolution._REJECTED.search(first) is not None)


@pytest.mark.parametrize(
    "said",
    [
        "The user doesn't want to proceed with this tool use.", "USER DOES NOT WANT TO PROCEED",
        "Rejected by the user", "denıed by user", "Declined by the user.", "user rejected tool",
        "The uſer DENİED the request", "User declined this command", "user denied call",
    ],
)  # fmt: skip
def test_each_refusal_is_turned_down(said: str) -> None:
    """Each alternative of the pattern (the literal gate in front of it must pass each)."""
    action = ToolAction("bash", ToolKind.SHELL, "ls", command="ls")
    assert resolution._REJECTED.search(said) is not None
    assert turned_down(ToolEvent(0, action, {"command": "ls"}, f"  {said}\nmore", 1, True))


_SCRIPT_BITS = [
    *writers.SCRIPT_HINTS, "open", "ope", "n(", "File", ".write(", "IO", "Bun", ".", "write",
    "_", "shutil", "Stream", "(", "x", " ", "\n", "Write", "OPEN",
]  # fmt: skip


@settings(max_examples=1_000, deadline=None)
@given(st.lists(st.sampled_from(_SCRIPT_BITS), max_size=8).map("".join))
def test_the_script_gate_is_the_hints(text: str) -> None:
    """``SCRIPT_GATE`` (fewer literals) passes exactly the texts ``SCRIPT_HINTS`` does."""
    assert any(g in text for g in writers.SCRIPT_GATE) == any(
        h in text for h in writers.SCRIPT_HINTS
    )


def test_the_script_gate_is_made_of_hints() -> None:
    # each gate word is a hint, and each hint holds a gate word
    assert set(writers.SCRIPT_GATE) <= set(writers.SCRIPT_HINTS)
    assert all(any(g in h for g in writers.SCRIPT_GATE) for h in writers.SCRIPT_HINTS)


# Words of the patterns searched with ``caseless_search``, in other cases, split, glued,
# and next to characters that fold to ASCII ones ("ı", "İ", "ſ", the Kelvin sign).
_CASELESS_PIECES = [
    "must", "MUST", "Never", "don't", "Do Not", "always", "Ensure", "required", "minimal",
    "I've decided", "i have decided", "keep", "rather than", "because", "only", "can't",
    "Your task is to", "the job is specifically to", "THE ASSIGNMENT HERE IS ONLY TO",
    "task", "is", "to", "your", "the", "port", "version", "=", ":", "uses", "value",
    "No issues", "found 3", "2 Errors", "all checks passed", "Successfully", "compiled",
    "everything is OK", "0 errors", "finished", "ı", "İ", "ſ", "\u212a", "é", " ", "-", "_",
    "3", "\n", "x", "Goal", "Acceptance", "Do not add", "keep all", "not Replace", "Because",
    "instead of", "the fix is", "I'll use", "Root cause", "doesn't support", "rather than",
    "I've fixed", "is Done", "All tests pass", "close", "Resolved", "--status=closed", "DONE",
    "Let me", "I'll", "Next step is", "Next steps:", "TODO", "plan", "I will add", ":", " :",
    "cannot compile module", "FAILED (", "failed (", "npm ERR! code", "12 tests",
    "Error: command failed", "Let's", "OK", "Okay", "I apologise", "We Need", "This is because",
    "That's ", "which Means", "so that", "django test", "Django  Test", "django-admin test",
]  # fmt: skip
_CASELESS = [
    (users._RULE, users._rule), (users._BAN, users._ban), (users._OBLIGATION, users._obligation),
    (users._SCOPE, users._scope), (users._VALUE_RELATION, users._relates),
    (checks._VERDICT, checks._says_verdict), (specexcerpt._RULE_LINE, specexcerpt._rule_line),
    (specexcerpt._LIMIT_LINE, specexcerpt._limit_line), (decide._WHY, decide._why),
    (decide._DECISION, decide._decision), (work._CLAIM, work._claim),
    (items._CLOSE, items._closes), (progress._INTENT, progress._intent),
    (plans._HEAD, plans._head), (fixes._WRAPPER, fixes._wraps),
]  # fmt: skip

_CASELESS_AT_START = [
    (fixes._ANNOUNCES, fixes._announces), (decide._REASON_NEXT, decide._reason_next),
]  # fmt: skip


@settings(max_examples=3_000, deadline=None)
@given(st.lists(st.sampled_from(_CASELESS_PIECES), max_size=8).map("".join) | st.text(max_size=30))
def test_caseless_searches_answer_as_their_patterns(text: str) -> None:
    for pattern, found in _CASELESS:
        assert found(text) == (pattern.search(text) is not None), pattern.pattern
    for pattern, found in _CASELESS_AT_START:
        assert found(text) == (pattern.match(text) is not None), pattern.pattern
    # the literal gate in front of the Django pattern
    assert ("django" in text and checks._DJANGO_TEST.search(text) is not None) == (
        checks._DJANGO_TEST.search(text) is not None
    )


@pytest.mark.parametrize(
    "pattern",
    [r"\bmust\b", r"(?i)\bmust\b", r"\Smust", r"İ", r"\Wmust"],
)
def test_caseless_search_takes_only_patterns_it_answers_for(pattern: str) -> None:
    """Not case-insensitive, inline flags, an upper-case escape, non-ASCII: refused."""
    flags = 0 if pattern == r"\bmust\b" else re.IGNORECASE
    if pattern.startswith("(?i)"):
        flags = 0
    with pytest.raises(AssertionError):
        caseless_search(re.compile(pattern, flags))
