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
    ],
)
def test_classification(name: str, args: dict[str, str], kind: ToolKind, target: str) -> None:
    action = classify_call(name, args)
    assert action.kind is kind and action.target == target


def test_one_line_never_spans_lines() -> None:
    action = classify_call("bash", {"command": "echo a\necho b"})
    assert "\n" not in one_line(action, "a\nb\n")
