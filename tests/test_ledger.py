"""The state ledger: extraction per tool shape, merging, budgeted rendering, round trips."""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from windowkeeper.compaction.handoff import LEDGER_HEADING
from windowkeeper.core.tokens import estimate_tokens
from windowkeeper.summary.ledger.ledger import (
    CommandRecord,
    Ledger,
    extract_ledger,
    merge_ledgers,
    parse_ledger,
    render_ledger,
)

Message = dict[str, Any]
SHA40 = "3f2a9c1b7d5e4f6a8b9c0d1e2f3a4b5c6d7e8f90"


def user(text: Any) -> Message:
    return {"role": "user", "content": text}


def say(text: str | None) -> Message:
    return {"role": "assistant", "content": text}


def call(cid: str, name: str, args: dict[str, Any] | str) -> Message:
    arguments = args if isinstance(args, str) else json.dumps(args)
    function = {"name": name, "arguments": arguments}
    return {
        "role": "assistant",
        "content": None,
        "tool_calls": [{"id": cid, "type": "function", "function": function}],
    }


def result(cid: str, content: Any) -> Message:
    return {"role": "tool", "tool_call_id": cid, "content": content}


def rounds(*pairs: tuple[str, str, dict[str, Any] | str, Any]) -> list[Message]:
    messages: list[Message] = []
    for cid, name, args, output in pairs:
        messages += [call(cid, name, args), result(cid, output)]
    return messages


# --- extraction per tool shape ---------------------------------------------------------


def test_claude_code_tools() -> None:
    turns = [
        user("Fix the parser in src/parse.py please."),
        *rounds(
            ("c1", "Read", {"file_path": "src/parse.py"}, "     1→import re\n"),
            ("c2", "Grep", {"pattern": "def parse", "path": "src"}, "src/parse.py:3:def parse"),
            (
                "c3",
                "Edit",
                {"file_path": "src/parse.py", "old_string": "a", "new_string": "b"},
                "ok",
            ),
            ("c4", "Write", {"file_path": "tests/test_parse.py", "content": "x"}, "File created"),
            (
                "c5",
                "Bash",
                {"command": "pytest -x tests/", "description": "run tests"},
                "[tool error] Exit code 1\nE       assert 1 == 2\n"
                "FAILED tests/test_parse.py::test_one - assert 1 == 2\n1 failed in 0.1s",
            ),
        ),
    ]
    ledger = extract_ledger(turns)
    assert ledger.files_read == ("src/parse.py",)
    assert ledger.files_modified == ("src/parse.py", "tests/test_parse.py")
    assert ledger.commands == (CommandRecord("pytest -x tests/", 1),)
    assert "E       assert 1 == 2" in ledger.errors
    assert "FAILED tests/test_parse.py::test_one - assert 1 == 2" in ledger.errors


def test_openhands_tools() -> None:
    editor = "str_replace_editor"
    turns = rounds(
        ("o1", editor, {"command": "view", "path": "/workspace/app.py"}, "1\timport os"),
        (
            "o2",
            editor,
            {"command": "create", "path": "/workspace/repro.py", "file_text": "x"},
            "ok",
        ),
        ("o3", editor, {"command": "str_replace", "path": "/workspace/app.py"}, "edited"),
        (
            "o4",
            "execute_bash",
            {"command": "python /workspace/repro.py"},
            'Traceback (most recent call last):\n  File "x", line 1\n'
            "ValueError: bad input\n[Command finished with exit code 1]",
        ),
    )
    ledger = extract_ledger(turns)
    assert ledger.files_read == ("/workspace/app.py",)
    assert ledger.files_modified == ("/workspace/repro.py", "/workspace/app.py")
    assert ledger.commands == (CommandRecord("python /workspace/repro.py", 1),)
    assert ledger.errors == ("ValueError: bad input",)


def test_mini_swe_agent_returncode() -> None:
    output = "<returncode>2</returncode>\n<output>\nsrc/a.c:3:5: error: expected ';'\n</output>"
    ledger = extract_ledger(rounds(("m1", "bash", {"command": "cd /testbed &&  make"}, output)))
    assert ledger.commands == (CommandRecord("cd /testbed && make", 2),)
    assert ledger.errors == ("src/a.c:3:5: error: expected ';'",)


def test_exit_code_unknown_and_missing_result() -> None:
    turns = [
        call("x1", "Bash", {"command": "ls"}),
        *rounds(("x2", "Bash", {"command": "pwd"}, "/")),
    ]
    assert extract_ledger(turns).commands == (CommandRecord("ls", None), CommandRecord("pwd", None))


def test_error_line_kinds() -> None:
    log = "\n".join(
        [
            "npm ERR! missing script: build",
            "fatal: not a git repository",
            "error[E0308]: mismatched types",
            "tests/test_x.py:12: AssertionError",
            "just some output line",
            "Error handling is described in the docs",
        ]
    )
    errors = extract_ledger(rounds(("e1", "bash", {"command": "make"}, log))).errors
    assert errors == (
        "npm ERR! missing script: build",
        "fatal: not a git repository",
        "error[E0308]: mismatched types",
        "tests/test_x.py:12: AssertionError",
    )


def test_error_lines_from_user_text_and_huge_output_tail() -> None:
    huge = "noise line\n" * 50_000 + "RuntimeError: at the very end\n"
    turns = [
        user("I get this:\nKeyError: 'user_id'\nCan you fix it?"),
        *rounds(("h1", "bash", {"command": "python run.py"}, huge)),
    ]
    errors = extract_ledger(turns).errors
    assert errors == ("KeyError: 'user_id'", "RuntimeError: at the very end")


def test_reads_never_scanned_for_errors() -> None:
    source = "class ParseError(Exception):\n    pass\nValueError: in a docstring\n"
    ledger = extract_ledger(rounds(("r1", "Read", {"file_path": "a.py"}, source)))
    assert ledger.errors == ()


def test_shell_writes_count_as_modified() -> None:
    turns = rounds(
        ("s1", "bash", {"command": "sed -i 's/a/b/' src/conf.py"}, ""),
        ("s2", "bash", {"command": "echo hi > notes.txt 2>/dev/null"}, ""),
        ("s3", "bash", {"command": "git mv old.py new.py"}, ""),
        ("s4", "bash", {"command": "python -c 'print(1 > 0)'"}, ""),
    )
    assert extract_ledger(turns).files_modified == ("src/conf.py", "notes.txt", "new.py")


def test_paths_in_text_are_not_reads() -> None:
    turns = [user("Look at src/a.py and README.md"), say("I will read src/b.py next.")]
    ledger = extract_ledger(turns)
    assert ledger.files_read == ()
    assert ledger.files_modified == ()


def test_identifiers() -> None:
    git_log = f"commit {SHA40}\nAuthor: A <a@b.c>\n\n    fix ABC-7\n"
    turns = [
        user("Please fix ABC-42, see #1234 and https://example.com/issues/9. UTF-8 only."),
        say("Working on spotter-gqc.4 now."),
        *rounds(
            ("g1", "Bash", {"command": "git log -1"}, git_log),
            ("g2", "Bash", {"command": "cat data.txt"}, "deadbeef12 QUJDRA1b2c3d4e5f6=="),
        ),
    ]
    identifiers = extract_ledger(turns).identifiers
    assert identifiers[:3] == ("ABC-42", "#1234", "https://example.com/issues/9")
    assert "spotter-gqc.4" in identifiers
    assert SHA40 in identifiers
    assert "UTF-8" not in identifiers
    assert not any("deadbeef" in i or "1b2c3d4e5f6" in i for i in identifiers)


def test_uuids_from_user_text_and_a_few_from_command_output() -> None:
    uuid = "258c7280-ae70-4798-800f-63464d01a85d"
    from_user = extract_ledger([user(f"session {uuid}")]).identifiers
    log = "\n".join(f"request {n:08x}-ae70-4798-800f-63464d01a85d" for n in range(10))
    from_tool = extract_ledger(rounds(("u1", "Bash", {"command": "ls"}, log))).identifiers
    from_read = extract_ledger(rounds(("u2", "Read", {"file_path": "a.txt"}, uuid))).identifiers
    assert from_user == (uuid,)
    assert len(from_tool) == 3 and from_tool[0].startswith("00000000-")
    assert from_read == ()


def test_odd_messages_are_tolerated() -> None:
    turns: list[Message] = [
        user([{"type": "text", "text": "see #77"}, {"type": "image_url", "image_url": {}}]),
        say(None),
        call("n1", "bash", "ls -la /tmp"),
        result("n1", [{"type": "text", "text": "total 0"}]),
        result("ghost", "fatal: orphan result"),
    ]
    before = copy.deepcopy(turns)
    ledger = extract_ledger(turns)
    assert turns == before
    assert ledger.commands == (CommandRecord("ls -la /tmp", None),)
    assert ledger.errors == ("fatal: orphan result",)
    assert ledger.identifiers == ("#77",)


def test_commands_capped_to_one_line() -> None:
    command = "python - <<'EOF'\n" + "print('x')\n" * 100 + "EOF"
    ledger = extract_ledger(rounds(("l1", "bash", {"command": command}, "")))
    (record,) = ledger.commands
    assert "\n" not in record.command
    assert len(record.command) <= 160


# --- merging ---------------------------------------------------------------------------


def test_merge_order_and_dedupe() -> None:
    old = Ledger(
        files_read=("a.py", "b.py"),
        files_modified=("a.py",),
        commands=(CommandRecord("pytest", 1), CommandRecord("ls", 0)),
        errors=("E1",),
        identifiers=("#1",),
    )
    new = Ledger(
        files_read=("b.py", "c.py"),
        files_modified=("c.py", "a.py"),
        commands=(CommandRecord("pytest", 1),),
        errors=("E2", "E1"),
        identifiers=("#2", "#1"),
    )
    merged = merge_ledgers(old, new)
    assert merged.files_read == ("a.py", "b.py", "c.py")
    assert merged.files_modified == ("a.py", "c.py")
    # A re-run command or a repeated error moves to its newest position.
    assert merged.commands == (CommandRecord("ls", 0), CommandRecord("pytest", 1))
    assert merged.errors == ("E2", "E1")
    assert merged.identifiers == ("#1", "#2")
    assert merge_ledgers(Ledger(), new) == merge_ledgers(new, Ledger())


def test_merge_matches_extraction_of_the_whole() -> None:
    first = rounds(("a", "Read", {"file_path": "x.py"}, "1"), ("b", "bash", {"command": "ls"}, ""))
    second = rounds(
        ("c", "Edit", {"file_path": "x.py"}, "ok"), ("d", "bash", {"command": "ls"}, "")
    )
    merged = merge_ledgers(extract_ledger(first), extract_ledger(second))
    assert merged == extract_ledger(first + second)


# --- rendering and parsing -------------------------------------------------------------

SAMPLE = Ledger(
    files_read=("README.md", "src/c.py"),
    files_modified=("src/a.py", "odd, name.py"),
    commands=(CommandRecord("pytest -x tests/", 1), CommandRecord("echo `a` -> exit 3", None)),
    errors=("tests/test_x.py:12: AssertionError: assert 1 == 2", '"quoted" error'),
    identifiers=("#1234", "ABC-42"),
)


def test_render_format() -> None:
    text = render_ledger(SAMPLE, 10_000)
    assert text.splitlines() == [
        LEDGER_HEADING,
        'Files modified: src/a.py, "odd, name.py"',
        "Files read: README.md, src/c.py",
        "Commands:",
        "- `pytest -x tests/` -> exit 1",
        "- `echo `a` -> exit 3` -> exit ?",
        "Errors:",
        "- tests/test_x.py:12: AssertionError: assert 1 == 2",
        '- "\\"quoted\\" error"',
        "Identifiers: #1234, ABC-42",
    ]
    assert parse_ledger(text) == SAMPLE


def test_empty_ledger_renders_nothing() -> None:
    assert Ledger().is_empty()
    assert render_ledger(Ledger(), 1_000) == ""
    assert parse_ledger("") == Ledger()


def test_render_within_budget_drops_oldest_commands_first() -> None:
    ledger = Ledger(
        files_read=tuple(f"src/read_{i}.py" for i in range(20)),
        files_modified=("src/keep.py",),
        commands=tuple(CommandRecord(f"pytest tests/test_{i}.py", i % 2) for i in range(60)),
        errors=("ValueError: boom",),
        identifiers=("ABC-1",),
    )
    full = render_ledger(ledger, 100_000)
    budget = estimate_tokens(full) // 2
    text = render_ledger(ledger, budget)
    assert estimate_tokens(text) <= budget
    parsed = parse_ledger(text)
    assert parsed.files_read == ledger.files_read
    assert parsed.files_modified == ledger.files_modified
    assert parsed.commands == ledger.commands[-len(parsed.commands) :]
    assert 0 < len(parsed.commands) < 60
    omitted = 60 - len(parsed.commands)
    assert f"({omitted} older entries omitted)" in text


def test_render_tiny_budget_keeps_modified_and_identifiers_last() -> None:
    ledger = Ledger(
        files_read=("r.py",) * 1 + tuple(f"r{i}.py" for i in range(30)),
        files_modified=("m.py",),
        commands=(CommandRecord("make", 0),),
        errors=("E",),
        identifiers=("#9",),
    )
    text = render_ledger(ledger, 20)
    assert estimate_tokens(text) <= 20
    parsed = parse_ledger(text)
    assert parsed.files_modified == ("m.py",)
    assert parsed.identifiers == ("#9",)
    assert parsed.commands == () and parsed.files_read == ()
    assert render_ledger(ledger, 1) == ""


def test_parse_tolerates_surroundings() -> None:
    text = (
        "## Critical Context\n- x\n\n"
        + render_ledger(SAMPLE, 10_000)
        + "\n(3 older entries omitted)\n"
    )
    assert parse_ledger(text) == SAMPLE


paths = st.text(min_size=0, max_size=25)
records = st.builds(CommandRecord, st.text(max_size=40), st.none() | st.integers(-255, 255))
ledgers = st.builds(
    Ledger,
    files_read=st.lists(paths, max_size=5).map(tuple),
    files_modified=st.lists(paths, max_size=5).map(tuple),
    commands=st.lists(records, max_size=5).map(tuple),
    errors=st.lists(st.text(max_size=40), max_size=5).map(tuple),
    identifiers=st.lists(paths, max_size=5).map(tuple),
)


@settings(max_examples=300, deadline=None)
@given(ledgers)
def test_round_trip(ledger: Ledger) -> None:
    assert parse_ledger(render_ledger(ledger, 1_000_000)) == ledger


@settings(max_examples=100, deadline=None)
@given(ledgers, st.integers(5, 200))
def test_budget_always_respected(ledger: Ledger, budget: int) -> None:
    text = render_ledger(ledger, budget)
    assert estimate_tokens(text) <= budget
    parsed = parse_ledger(text)
    assert set(parsed.files_modified) <= set(ledger.files_modified)
    assert set(parsed.commands) <= set(ledger.commands)


@pytest.mark.parametrize(
    "item",
    ["a, b", ", ", "x,", '"', " lead", "trail ", "line\nbreak", "\u2028", "\x85", "ünï, ☃"],
)
def test_round_trip_tricky_items(item: str) -> None:
    ledger = Ledger(
        files_read=(item, "plain"),
        files_modified=(item,),
        commands=(CommandRecord(item, 0),),
        errors=(item,),
        identifiers=(item, item + "2"),
    )
    assert parse_ledger(render_ledger(ledger, 10_000)) == ledger


# --- roots, deletions, failure context -------------------------------------------------

ROOT = "/home/me/projects/app/"
abs_paths = st.lists(
    st.sampled_from(["src/a.py", "src/b, c.py", "x/", "/etc/hosts", "rel.py", "", "a\nb"]).map(
        lambda p: p if p.startswith("/") or p in ("rel.py", "") else ROOT + p
    )
    | paths,
    max_size=6,
).map(tuple)


@settings(max_examples=300, deadline=None)
@given(abs_paths, abs_paths, abs_paths)
def test_round_trip_with_a_shared_root(modified: Any, deleted: Any, read: Any) -> None:
    ledger = Ledger(files_read=read, files_modified=modified, files_deleted=deleted)
    assert parse_ledger(render_ledger(ledger, 1_000_000)) == ledger


def test_shared_root_is_declared_once() -> None:
    files = tuple(f"{ROOT}{d}/module.py" for d in ("src", "lib", "docs", "tests", "bin"))
    ledger = Ledger(files_read=files, files_modified=(*files[:2], "/etc/hosts", "rel.py"))
    text = render_ledger(ledger, 10_000)
    assert text.count(ROOT) == 1
    assert f"Root: {ROOT}" in text.splitlines()
    assert 'Files modified: src/module.py, lib/module.py, /etc/hosts, "rel.py"' in text
    assert parse_ledger(text) == ledger


def test_deleted_files_are_not_modified() -> None:
    turns = rounds(
        ("d1", "Write", {"file_path": "scripts/repro.py", "content": "x"}, "ok"),
        ("d2", "Edit", {"file_path": "src/a.py"}, "ok"),
        ("d3", "bash", {"command": "rm scripts/repro.py && git status --short"}, "exit code 0"),
        ("d4", "bash", {"command": "git rm -q old.py"}, "rm 'old.py'"),
    )
    ledger = extract_ledger(turns)
    assert ledger.files_modified == ("src/a.py",)
    assert ledger.files_deleted == ("scripts/repro.py", "old.py")
    again = extract_ledger(rounds(("d5", "Write", {"file_path": "old.py", "content": "y"}, "ok")))
    merged = merge_ledgers(ledger, again)
    assert merged.files_modified == ("src/a.py", "old.py")
    assert merged.files_deleted == ("scripts/repro.py",)
    assert parse_ledger(render_ledger(merged, 1_000)) == merged


def test_indented_error_names_in_successful_output_are_not_errors() -> None:
    diff = "diff --git a/x.py b/x.py\n     errors.GatewayError: 502,\n+    raise ValueError\n"
    ok = extract_ledger(rounds(("g1", "bash", {"command": "git diff"}, diff + "[exit code 0]")))
    assert ok.errors == ()
    failed = extract_ledger(rounds(("g2", "bash", {"command": "make"}, "  KeyError: 'x'\nexit 2")))
    assert failed.errors == ("KeyError: 'x'",)


def test_ids_from_command_output_and_agent_reports() -> None:
    turns = rounds(
        (
            "i1",
            "Bash",
            {"command": "bd ready"},
            "1. [P1] proj-a0y.3: Tail adapter\nsee https://x.io/t",
        ),
        (
            "i2",
            "Task",
            {"prompt": "Look at ABC-12"},
            "Done.\nagentId: a93ccab (resume)\n9f8e7d6c5b",
        ),
    )
    identifiers = extract_ledger(turns).identifiers
    assert identifiers == ("proj-a0y.3", "https://x.io/t", "ABC-12", "a93ccab")
