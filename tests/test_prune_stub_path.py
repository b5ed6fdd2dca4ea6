"""The prune tier's per-stub path (session 24, wt-prune16): each cut against what it
replaced (the replaced code is kept here as the oracle)."""

from __future__ import annotations

import re

from hypothesis import given, settings
from hypothesis import strategies as st

from windowkeeper.analysis import outputs, toolshapes
from windowkeeper.analysis.toolshapes import FILE_KINDS, ToolKind


def test_kind_constants_are_the_members() -> None:
    # The hot paths compare with these by identity: each must be its own member.
    for kind in ToolKind:
        assert getattr(toolshapes, f"{kind.name}_KIND") is kind
    assert FILE_KINDS == (ToolKind.READ, ToolKind.WRITE, ToolKind.EDIT)


def test_no_function_reads_a_kind_through_the_enum_class() -> None:
    # On Python 3.11 ``ToolKind.SHELL`` costs a hook call (EnumType defines __getattr__)
    # where ``SHELL_KIND`` is a global load: code that runs per message or per call reads
    # the constants. Module-level tables, read once at import, may name the members.
    import ast
    from pathlib import Path

    reads = []
    for path in Path(toolshapes.__file__).parents[1].rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda):
                continue
            for inner in ast.walk(node):
                if (isinstance(inner, ast.Attribute) and isinstance(inner.value, ast.Name)
                        and inner.value.id == "ToolKind" and inner.attr.isupper()):  # fmt: skip
                    reads.append(f"{path.name}:{inner.lineno}")
    assert reads == []


def _old_runs(runners: tuple[tuple[str, re.Pattern[str]], ...], command: str) -> bool:
    return any(word in command and p.search(command) for word, p in runners)


def _old_is_test_command(command: str) -> bool:
    runners, cut = outputs._TEST_RUNNERS, outputs._WITHOUT_TEST
    if _old_runs(runners[:cut], command):
        return True
    at = command.find("test")
    while at >= 0:
        if at and outputs._may_run_tests(command, at):
            return _old_runs(runners[cut:], command)
        at = command.find("test", at + 4)
    return False


_WORDS = [
    *(word for word, _ in outputs._TEST_RUNNERS), "test", "tests", "check", "run", "cd",
    "/testbed", "&&", "|", ";", "-x", "python", "-m", "gradlew", "mocha.opts", "xtox",
]  # fmt: skip
_COMMANDS = st.lists(
    st.one_of(st.sampled_from(_WORDS), st.text(alphabet=" \t\n.-_/ytnicx", max_size=4)),
    max_size=12,
).map(lambda parts: " ".join(parts))


@settings(max_examples=1_500, deadline=None)
@given(_COMMANDS)
def test_is_test_command_as_before(command: str) -> None:
    assert outputs.is_test_command.__wrapped__(command) == _old_is_test_command(command)


def test_is_test_command_real_shapes() -> None:
    for command, expected in (
        ("cd /testbed && python -m pytest tests/test_x.py -x", True),
        ("cd /testbed && grep -rn 'test' src", False),
        ("npm run test", True),
        ("make check", True),
        ("cat tox.ini", True),  # a runner's name as a word, as before
        ("cd /testbed && git diff", False),
    ):
        assert outputs.is_test_command.__wrapped__(command) is expected
        assert _old_is_test_command(command) is expected
