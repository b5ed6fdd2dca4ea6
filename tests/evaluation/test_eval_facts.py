"""The evaluation's own fact extraction: shell edits, ids, error lines, user messages."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from factories import assistant, call, tool, user
from windowkeeper.evaluation.facts import Fact, FactKind, message_facts, task_fact, user_text
from windowkeeper.evaluation.ids import issues, shas, tickets, urls, uuids
from windowkeeper.evaluation.shell import looks_like_path, shell_files
from windowkeeper.evaluation.text import TextIndex, encode, has_token, tokenize

EVALUATION = Path(__file__).resolve().parents[2] / "src" / "windowkeeper" / "evaluation"


def facts_of(message: dict[str, object]) -> set[tuple[FactKind, str]]:
    return {(f.kind, f.text) for f in message_facts(TextIndex().entry(message))}


@pytest.mark.parametrize(
    ("command", "touched", "modified"),
    [
        ("cat src/a.py | grep -n foo", ["src/a.py"], []),
        ("cat > src/new.py <<'EOF'\nimport os\nrm -rf other.py\nEOF", [], ["src/new.py"]),
        ("sed -i 's/a/b/' pkg/mod.py && grep -rn x tests/t.py", ["tests/t.py"], ["pkg/mod.py"]),
        ("cp a.py.bak a.py; mv old.txt new.txt", ["a.py.bak"], ["a.py", "old.txt", "new.txt"]),
        ("echo hi >> notes.md 2>/dev/null | tee -a log.txt", [], ["notes.md", "log.txt"]),
        ("git apply <<PATCH\n--- a/x/y.py\n+++ b/x/y.py\n@@\nPATCH", [], ["x/y.py"]),
        ("python -m pytest tests/test_x.py::test_y -q", ["tests/test_x.py"], []),
        ("cd /testbed && git diff django/db/models.py", ["django/db/models.py"], []),
        ("git checkout -- setup.py && rm build.log", [], ["setup.py", "build.log"]),
        ("find . -name '*.py' | xargs grep -l foo", [], []),
        ("python -c 'import a.b; print(1)'", [], []),
        ("mix deps.get && mix test test/x_test.exs", ["test/x_test.exs"], []),
    ],
)
def test_shell_files(command: str, touched: list[str], modified: list[str]) -> None:
    assert shell_files(command) == (touched, modified)


def test_looks_like_path() -> None:
    assert all(map(looks_like_path, ["setup.py", "src/x", "a/b/c.tar.gz", "./run.sh"]))
    for word in ["django.db.models", "-v", "https://x.org/a", "*.py", "1.5", "$HOME/x", ".env"]:
        assert not looks_like_path(word), word


@given(st.text(max_size=300))
def test_shell_files_never_raises(command: str) -> None:
    touched, modified = shell_files(command)
    assert all(looks_like_path(p) for p in (*touched, *modified))


def test_ids_are_whole_words() -> None:
    text = encode(
        "commit 3f9a2b7c1 (not deadbeefcafe nor 12345678) PAY-1423 fix/ABC-12-x UTF-8 "
        "#17 a#18 see https://github.com/o/r/pull/9. id 123e4567-e89b-12d3-a456-426614174000"
    )
    assert list(shas(text)) == [b"3f9a2b7c1", b"123e4567"]
    assert list(tickets(text)) == [b"PAY-1423"]
    assert list(issues(text)) == [b"#17"]
    assert list(issues(encode('color: #333; fill="#999" fixes #42'))) == [b"#42"]
    assert list(urls(text)) == [(b"https://github.com/o/r/pull/9", b"github.com/o/r/pull/9")]
    assert list(uuids(text)) == [b"123e4567-e89b-12d3-a456-426614174000"]


def test_tool_call_files_and_edits() -> None:
    edit = assistant(None, call("1", "str_replace_editor", command="str_replace", path="/w/a/b.py"))
    view = assistant(None, call("2", "str_replace_editor", command="view", path="/w/a/c.py"))
    write = assistant(None, call("3", "Write", file_path="/w/d.md", content="x"))
    assert facts_of(edit) == {(FactKind.FILE, "/w/a/b.py"), (FactKind.MODIFIED_FILE, "/w/a/b.py")}
    assert facts_of(view) == {(FactKind.FILE, "/w/a/c.py")}
    assert (FactKind.MODIFIED_FILE, "/w/d.md") in facts_of(write)


def test_error_lines_and_names_come_from_tool_results_only() -> None:
    output = "Traceback (most recent call last):\n  File x\nKeyError: 'user'\nERROR: boom happened"
    found = facts_of(tool("1", output))
    assert (FactKind.ERROR, "KeyError") in found
    assert (FactKind.ERROR_LINE, "KeyError: 'user'") in found
    assert (FactKind.ERROR_LINE, "ERROR: boom happened") in found
    assert not any(kind is FactKind.ERROR for kind, _ in facts_of(user(output)))


def test_code_is_not_an_error_line() -> None:
    listing = "    return checks.Error(\n    HttpResponseServerError, QueryDict,\nERROR: it broke"
    found = facts_of(tool("1", listing))
    assert found == {(FactKind.ERROR_LINE, "ERROR: it broke")}


def test_only_four_error_lines_per_result() -> None:
    output = "\n".join(f"FAILED tests/test_{i}.py::test_case" for i in range(9))
    lines = [t for k, t in facts_of(tool("1", output)) if k is FactKind.ERROR_LINE]
    assert sorted(lines) == sorted(f"FAILED tests/test_{i}.py::test_case" for i in (0, 1, 7, 8))


@pytest.mark.parametrize(
    ("content", "typed"),
    [
        ("fix the bug", "fix the bug"),
        ("[Request interrupted by user]\n\ncreate the beads", "create the beads"),
        ("[Request interrupted by user for tool use]", None),
        ("<task-notification>\n<task-id>b1</task-id>\n</task-notification>", None),
        ("Stop hook feedback:\n[hook]: failed", None),
        ("This session is being continued from a previous conversation that ran out", None),
        ("<command-name>/x</command-name><command-args>go fast</command-args>", "go fast"),
        ("", None),
    ],
)
def test_real_user_text(content: str, typed: str | None) -> None:
    assert user_text(user(content)) == typed


def test_user_terms_and_task() -> None:
    message = user("Use port 54329 and keep config/app.yaml; never touch migrations, please.")
    terms = {t for k, t in facts_of(message) if k is FactKind.USER_TERM}
    assert terms == {"54329", "config/app.yaml", "migrations"}
    task = task_fact(user("  Fix   the\n\nbug " + "x" * 100))
    assert isinstance(task, Fact) and task.text == "Fix the bug " + "x" * 68
    assert task.needle == encode(task.text)


def test_tokens_make_path_suffixes_and_ignore_punctuation() -> None:
    tokens = tokenize(encode('see "django/db/models.py:12", (AUTH-42). Done.'))
    for needle in (b"django/db/models.py", b"db/models.py", b"models.py", b"AUTH-42", b"Done"):
        assert has_token(tokens, needle), needle
    assert not has_token(tokens, b"models")


def test_the_instrument_does_not_import_what_it_measures() -> None:
    """Facts are extracted by the evaluation's own rules, never by the compressor's."""
    for name in ("facts", "ids", "shell", "text", "retention"):
        tree = ast.parse((EVALUATION / f"{name}.py").read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.level:
                assert node.module is None or not node.module.startswith(
                    ("analysis", "summary", "compaction", "engine")
                ), (name, node.module)


def test_at_most_ten_ids_per_message() -> None:
    dump = "\n".join(f"row {i}: {i:08x}-aaaa-4bbb-8ccc-{i:012x}" for i in range(40))
    ids = [t for k, t in facts_of(tool("1", dump)) if k is FactKind.ID]
    assert len(ids) == 10
    assert {t[:8] for t in ids} == {f"{i:08x}" for i in (*range(5), *range(35, 40))}
