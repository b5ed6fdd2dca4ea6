from __future__ import annotations

import pytest

from windowkeeper.analysis.toolshapes import ToolKind, classify_call, exit_code, one_line


@pytest.mark.parametrize(
    ("output", "code"),
    [
        ("<returncode>1</returncode>\n<output>boom</output>", 1),
        ("ok\n[Command finished with exit code 0]", 0),
        ("[tool error] Exit code 2\nfatal: x", 2),
        ('{"exit_code": 3, "stdout": ""}', 3),
        ("CalledProcessError: returned non-zero exit status 4", 4),
        ("make: *** [all] Error 1\nexit 7", 7),
        ("exit code 1 ... later exit code 0", 0),
        ("no code here", None),
    ],
)
def test_exit_codes(output: str, code: int | None) -> None:
    assert exit_code(output) == code


def test_exit_code_in_the_head_of_a_long_output() -> None:
    assert exit_code("exit status: 5\n" + "x" * 10_000) == 5


@pytest.mark.parametrize(
    ("name", "args", "kind", "target"),
    [
        ("Bash", {"command": "ls -la"}, ToolKind.SHELL, "ls -la"),
        ("execute_bash", {"command": "pytest"}, ToolKind.SHELL, "pytest"),
        ("str_replace_editor", {"command": "create", "path": "/a.py"}, ToolKind.WRITE, "/a.py"),
        ("str_replace_editor", {"command": "str_replace", "path": "/a.py"}, ToolKind.EDIT, "/a.py"),
        ("Read", {"file_path": "/x.py"}, ToolKind.READ, "/x.py"),
        ("Glob", {"pattern": "**/*.py"}, ToolKind.SEARCH, "**/*.py"),
        ("WebSearch", {"query": "pillow resize"}, ToolKind.WEB_SEARCH, "pillow resize"),
        ("WebFetch", {"url": "https://x.dev"}, ToolKind.FETCH, "https://x.dev"),
        ("get_order", {"order_id": "A1"}, ToolKind.OTHER, "order_id=A1"),
        # MCP servers and API namespaces in front of a known operation
        ("mcp__filesystem__write_file", {"path": "a/b.py"}, ToolKind.WRITE, "a/b.py"),
        ("mcp__filesystem__read_text_file", {"path": "a/b.py"}, ToolKind.READ, "a/b.py"),
        ("functions.bash", {"command": "make"}, ToolKind.SHELL, "make"),
        ("default_api:run_shell_command", {"command": "ls"}, ToolKind.SHELL, "ls"),
        ("developer__shell", {"command": "pytest -x"}, ToolKind.SHELL, "pytest -x"),
        ("developer__text_editor", {"command": "write", "path": "n.md"}, ToolKind.WRITE, "n.md"),
        ("builtin_edit_existing_file", {"filepath": "s.ts"}, ToolKind.EDIT, "s.ts"),
        # other agents' names and argument keys for the same operations
        ("insert_edit_into_file", {"filePath": "/w/app.ts"}, ToolKind.EDIT, "/w/app.ts"),
        ("replace_string_in_file", {"filePath": "/w/app.ts"}, ToolKind.EDIT, "/w/app.ts"),
        ("read_file", {"absolute_path": "/r/x.go"}, ToolKind.READ, "/r/x.go"),
        ("read_file", {"relative_workspace_path": "x.go"}, ToolKind.READ, "x.go"),
        ("search_replace", {"file_path": "m.py"}, ToolKind.EDIT, "m.py"),
        ("apply_diff", {"path": "m.py"}, ToolKind.EDIT, "m.py"),
        ("grep_search", {"query": "TODO"}, ToolKind.SEARCH, "TODO"),
        ("run_in_terminal", {"command": "npm test"}, ToolKind.SHELL, "npm test"),
        # an unknown operation stays unknown, whatever its namespace
        ("mcp__tickets__get_order", {"order_id": "A1"}, ToolKind.OTHER, "order_id=A1"),
    ],
)
def test_classification(name: str, args: dict[str, str], kind: ToolKind, target: str) -> None:
    action = classify_call(name, args)
    assert action.kind is kind and action.target == target


def test_one_line_never_spans_lines() -> None:
    action = classify_call("bash", {"command": "echo a\necho b"})
    assert "\n" not in one_line(action, "a\nb\n")
