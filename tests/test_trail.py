"""The artifact trail of a handoff: files per tool shape, commands, error lines, values,
merging across compactions, and the text round trip of tricky items."""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest

from windowkeeper.analysis.events import Analysis
from windowkeeper.summary.handoff.extract import Placement, extract_state, previous_state
from windowkeeper.summary.handoff.model import Command, HandoffState
from windowkeeper.summary.handoff.parse import parse_state
from windowkeeper.summary.handoff.text import render

Message = dict[str, Any]
SHA40 = "3f2a9c1b7d5e4f6a8b9c0d1e2f3a4b5c6d7e8f90"
NEW = Placement(task_in_head=False, user_in_tail=False)


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


def trail(turns: list[Message], previous: str | None = None) -> HandoffState:
    return extract_state(Analysis(turns), previous_state(previous), NEW)


def seen(state: HandoffState) -> tuple[str, ...]:
    """The error lines a handoff quotes: under its open errors, else in its ledger (a
    line is quoted once)."""
    quoted = [line for error in state.errors for line in error.lines]
    return tuple(dict.fromkeys([*quoted, *state.error_lines]))


def files(state: HandoffState, status: str) -> tuple[str, ...]:
    return tuple(path for path, how in state.files if how == status)


# --- per tool shape --------------------------------------------------------------------


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
    state = trail(turns)
    assert files(state, "modified") == ("src/parse.py",)
    assert files(state, "created") == ("tests/test_parse.py",)
    assert state.commands == (Command("pytest -x tests/", 1),)
    # The open error quotes its error lines; the ledger does not repeat them.
    quoted = [line for error in state.errors for line in error.lines]
    assert "E       assert 1 == 2" in quoted and "E       assert 1 == 2" not in state.error_lines
    assert "FAILED tests/test_parse.py::test_one - assert 1 == 2" in quoted


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
    state = trail(turns)
    assert files(state, "created") == ("/workspace/repro.py",)
    assert files(state, "modified") == ("/workspace/app.py",)
    assert state.commands == (Command("python /workspace/repro.py", 1),)
    assert seen(state) == ("ValueError: bad input",)


def test_mini_swe_agent_returncode() -> None:
    output = "<returncode>2</returncode>\n<output>\nsrc/a.c:3:5: error: expected ';'\n</output>"
    state = trail(rounds(("m1", "bash", {"command": "cd /testbed &&  make"}, output)))
    assert state.commands == (Command("cd /testbed && make", 2),)
    assert seen(state) == ("src/a.c:3:5: error: expected ';'",)


def test_read_only_commands_are_counted_and_unknown_exit_codes_are_not_printed() -> None:
    turns = [
        call("x1", "Bash", {"command": "ls"}),
        *rounds(("x2", "Bash", {"command": "pwd"}, "/"), ("x3", "Bash", {"command": "make"}, "")),
    ]
    state = trail(turns)
    assert dict(state.read_only) == {"ls": 1, "pwd": 1}
    assert state.commands == (Command("make", None),)
    assert "- `make`" in render(state) and "-> exit ?" not in render(state)


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
    state = trail(rounds(("e1", "bash", {"command": "make"}, log)))
    assert state.error_lines == (
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
    assert trail(turns).error_lines == ("KeyError: 'user_id'", "RuntimeError: at the very end")


def test_reads_never_scanned_for_errors() -> None:
    source = "class ParseError(Exception):\n    pass\nValueError: in a docstring\n"
    assert trail(rounds(("r1", "Read", {"file_path": "a.py"}, source))).error_lines == ()


def test_shell_writes_count_as_modified() -> None:
    turns = rounds(
        ("s1", "bash", {"command": "sed -i 's/a/b/' src/conf.py"}, ""),
        ("s2", "bash", {"command": "echo hi > notes.txt 2>/dev/null"}, ""),
        ("s3", "bash", {"command": "git mv old.py new.py"}, ""),
        ("s4", "bash", {"command": "python -c 'print(1 > 0)'"}, ""),
    )
    state = trail(turns)
    assert files(state, "modified") == ("src/conf.py", "notes.txt", "new.py")
    assert files(state, "deleted") == ("old.py",)


def test_every_file_an_in_place_edit_names_is_modified() -> None:
    turns = rounds(
        ("i1", "bash", {"command": "sed -i -e 's/a/b/' -e 's/c/d/' src/one.py src/two.py"}, ""),
        ("i2", "bash", {"command": "sed -i '' 's/x/y/' mac.cfg"}, ""),  # BSD: empty suffix
        ("i3", "bash", {"command": "perl -pi -e 's/old/new/g' lib/a.pm lib/b.pm"}, ""),
        ("i4", "bash", {"command": "sed -i 's/q/r/' three.txt four.txt"}, ""),
    )
    assert files(trail(turns), "modified") == (
        "src/one.py", "src/two.py", "mac.cfg", "lib/a.pm", "lib/b.pm", "three.txt", "four.txt"
    )  # fmt: skip


def test_a_script_that_writes_through_a_variable_or_copies_modifies_the_file() -> None:
    script = (
        "python3 - <<'EOF'\npath = 'pkg/query.py'\nsource = open(path).read()\n"
        "with open(path, 'w') as f:\n    f.write(source.replace('a', 'b'))\n"
        "import shutil\nshutil.copyfile('pkg/query.py', 'pkg/query_backup.py')\nEOF"
    )
    reader = "python3 - <<'EOF'\nname = 'pkg/models.py'\nprint(open(name).read())\nEOF"
    state = trail(
        rounds(("p1", "bash", {"command": script}, ""), ("p2", "bash", {"command": reader}, ""))
    )
    assert files(state, "modified") == ("pkg/query.py", "pkg/query_backup.py")


def test_paths_in_text_are_not_reads() -> None:
    turns = [user("Look at src/a.py and README.md"), say("I will read src/b.py next.")]
    assert trail(turns).files == ()


def test_identifiers_and_values() -> None:
    git_log = f"commit {SHA40}\nAuthor: A <a@b.c>\n\n    fix ABC-7\n"
    turns = [
        user("Please fix ABC-42, see #1234 and https://example.com/issues/9. UTF-8 only."),
        say("Working on spotter-gqc.4 now."),
        *rounds(
            ("g1", "Bash", {"command": "git log -1"}, git_log),
            ("g2", "Bash", {"command": "cat data.txt"}, "deadbeef12 QUJDRA1b2c3d4e5f6=="),
        ),
    ]
    values = trail(turns).values
    for value in ("ABC-42", "#1234", "https://example.com/issues/9", "spotter-gqc.4", SHA40):
        assert value in values
    assert "UTF-8" not in values
    assert not any("deadbeef" in v or "1b2c3d4e5f6" in v for v in values)


def test_uuids_from_user_text_and_a_few_from_command_output() -> None:
    uuid = "258c7280-ae70-4798-800f-63464d01a85d"
    assert uuid in trail([user(f"session {uuid}")]).values
    log = "\n".join(f"request {n:08x}-ae70-4798-800f-63464d01a85d" for n in range(10))
    from_tool = trail(rounds(("u1", "Bash", {"command": "ls"}, log))).values
    assert len(from_tool) == 3 and from_tool[0].startswith("00000000-")
    assert trail(rounds(("u2", "Read", {"file_path": "a.txt"}, uuid))).values == ()


def test_odd_messages_are_tolerated() -> None:
    turns: list[Message] = [
        user([{"type": "text", "text": "see #77"}, {"type": "image_url", "image_url": {}}]),
        say(None),
        call("n1", "bash", "ls -la /tmp"),
        result("n1", [{"type": "text", "text": "total 0"}]),
        result("ghost", "fatal: orphan result"),
    ]
    before = copy.deepcopy(turns)
    state = trail(turns)
    assert turns == before
    assert dict(state.read_only) == {"ls": 1}
    assert state.error_lines == ()  # an orphan result is no tool call of these turns
    assert state.values == ("#77",)


def test_commands_are_one_line_without_heredoc_bodies() -> None:
    command = "python - <<'EOF'\n" + "print('x')\n" * 100 + "EOF"
    (record,) = trail(rounds(("l1", "bash", {"command": command}, ""))).commands
    assert record.command == "python - <<'EOF'"


def test_deleted_files_and_files_changed_again() -> None:
    turns = rounds(
        ("d1", "Write", {"file_path": "scripts/repro.py", "content": "x"}, "ok"),
        ("d2", "Edit", {"file_path": "src/a.py"}, "ok"),
        ("d3", "bash", {"command": "rm scripts/repro.py && git status --short"}, "exit code 0"),
        ("d4", "bash", {"command": "git rm -q old.py"}, "rm 'old.py'"),
    )
    state = trail(turns)
    assert files(state, "modified") == ("src/a.py",)
    assert files(state, "deleted") == ("scripts/repro.py", "old.py")
    again = trail(rounds(("d5", "Write", {"file_path": "old.py", "content": "y"}, "ok")),
                  previous=render(state))  # fmt: skip
    assert files(again, "created") == ("old.py",)
    assert files(again, "deleted") == ("scripts/repro.py",)


def test_indented_error_names_in_successful_output_are_not_errors() -> None:
    diff = "diff --git a/x.py b/x.py\n     errors.GatewayError: 502,\n+    raise ValueError\n"
    ok = trail(rounds(("g1", "bash", {"command": "git diff"}, diff + "[exit code 0]")))
    assert ok.error_lines == ()
    failed = trail(rounds(("g2", "bash", {"command": "make"}, "  KeyError: 'x'\nexit 2")))
    assert seen(failed) == ("KeyError: 'x'",)


def test_ids_from_command_output_and_agent_reports() -> None:
    ready = "1. [P1] proj-a0y.3: Tail adapter\nsee https://x.io/t"
    report = "Done.\nagentId: a93ccab (resume)\n9f8e7d6c5b"
    turns = rounds(
        ("i1", "Bash", {"command": "bd ready"}, ready),
        ("i2", "Task", {"prompt": "Look at ABC-12"}, report),
    )
    values = trail(turns).values
    for value in ("proj-a0y.3", "https://x.io/t", "ABC-12", "a93ccab"):
        assert value in values
    assert "9f8e7d6c5b" not in values


# --- merging and the text form --------------------------------------------------------


def test_merging_matches_extraction_of_the_whole() -> None:
    first = rounds(
        ("a", "Read", {"file_path": "x.py"}, "1"), ("b", "bash", {"command": "make"}, "")
    )
    second = rounds(
        ("c", "Edit", {"file_path": "x.py"}, "ok"), ("d", "bash", {"command": "make"}, "")
    )
    merged = trail(second, previous=render(trail(first)))
    whole = trail(first + second)
    assert merged.files == whole.files
    assert merged.commands == whole.commands
    assert dict(merged.read_only) == dict(whole.read_only)


@pytest.mark.parametrize(
    "item", ["a, b", ", ", "x,", '"', " lead", "trail ", "line\nbreak", "\u2028", "\x85", "ünï, ☃"]
)
def test_tricky_items_read_back(item: str) -> None:
    state = HandoffState(
        files=((f"/r/{item}.py", "modified"), ("/r/plain.py", "read")),
        commands=(Command(item, 0),),
        error_lines=(item,),
        values=(item, item + "2"),
        constraints=(item,),
    )
    assert parse_state(render(state)) == state


def test_tracker_ids_made_of_a_word_and_a_short_hash() -> None:
    turns = rounds(("b1", "Bash", {"command": "bd ready"}, "1. [P1] proj-3r6: Fix login\n"))
    values = trail([user("Then close proj-a0f. Ignore the top-10s and mid-90s."), *turns]).values
    assert "proj-3r6" in values and "proj-a0f" in values
    assert not any(v in values for v in ("top-10s", "mid-90s"))


def test_paths_git_printed_relative_join_the_directory_they_are_relative_to() -> None:
    root = "/home/me/work/app/"
    status = "On branch main\n\tmodified:   lib/app/core.ex\n\tmodified:   test/core_test.exs\n"
    turns = rounds(
        ("e1", "Edit", {"file_path": root + "lib/app/core.ex", "old_string": "a"}, "ok"),
        ("r1", "Read", {"file_path": root + "lib/app/util.ex"}, "x"),
        ("g1", "Bash", {"command": "git status"}, status),
    )
    state = trail(turns)
    assert files(state, "modified") == (root + "lib/app/core.ex", root + "test/core_test.exs")
    assert state.root == root  # the repository, not lib/ where most files are


def test_the_root_is_the_parent_of_a_source_directory() -> None:
    src = "/srv/repo/src/"
    turns = rounds(
        *((f"r{n}", "Read", {"file_path": f"{src}shop/m{n}.py"}, "x") for n in range(3)),
        ("e1", "Edit", {"file_path": f"{src}shop/m0.py", "old_string": "a"}, "ok"),
    )
    assert trail(turns).root == "/srv/repo/src/shop/"
    others = ((f"o{n}", "Read", {"file_path": f"{src}other/z{n}.py"}, "x") for n in range(3))
    turns += rounds(*others)
    assert trail(turns).root == "/srv/repo/"


def test_pruned_head_output_feeds_the_handoff_trail() -> None:
    head = [user("Look around first."), *rounds(
        ("h1", "Bash", {"command": "git log --oneline -3"}, "a1b2c3d fix one\n9f8e7d6 add two\n")
    )]  # fmt: skip
    middle = rounds(("m1", "Bash", {"command": "make"}, "built"))
    state = extract_state(Analysis(middle), HandoffState(), NEW, head=Analysis(head))
    assert "a1b2c3d" in state.values and "9f8e7d6" in state.values
    assert not state.users  # the head's user words stay verbatim in the head
