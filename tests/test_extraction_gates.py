"""The extraction's gates (issue 27): each gives what the work it spares gave, compared
on generated input — the command lines' Hyperscan gate against the two regexes line by
line, and the failure tracker's skipped families against deriving every step's."""

from __future__ import annotations

import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from windowkeeper.analysis import commands, resolution
from windowkeeper.analysis.commands import line_gates
from windowkeeper.analysis.events import ToolEvent
from windowkeeper.analysis.resolution import OpenFailures, operation
from windowkeeper.analysis.shellwords import lines_of
from windowkeeper.analysis.toolshapes import ToolAction, ToolKind

# Pieces that make the gates match, almost match (a word glued to a letter, a non-ASCII
# letter beside a program name, ``>`` before ``&`` or /dev/null) or not at all.
_PIECES = st.sampled_from([
    "sed", "sed -i s/a/b/ f.py", "cat", "tee", "rm", "awk", "grep", "head", "wc", "gawk",
    "black", "ruff", "clang-format", "dd", "mv", "git", "touch", ">", ">>", "2>&1",
    "> /dev/null", ">&2", "x", "écat", "catĳ", "ſed", "_rm", "rm_", "9", "-", ".", "/",
    " ", "  ", "\t", "\n", "\n\n", "&&", "|", ";", "cd /tmp", "'", '"', "print(a > b)",
    "python -c \"", "<<EOF\nbody > x\nEOF\n", "é", "\u0131", "cat>", "<sed>",
])  # fmt: skip


# The gates as they were (each led by ``\b``, searched in the line itself).
_OLD_MAY_TOUCH = re.compile(commands._ARROW + "|" + commands._TOUCHER_WORDS)
_OLD_MAY_READ = re.compile(commands._READER_WORDS)


def _per_line(command: str) -> tuple[tuple[bool, bool, bool], ...]:
    return tuple(
        (
            _OLD_MAY_TOUCH.search(line) is not None,
            _OLD_MAY_READ.search(line) is not None,
            "cd " in line,
        )
        for line in lines_of(command)[0]
    )


def _as_lines(command: str, gates: commands.Gates) -> tuple[tuple[bool, bool, bool], ...]:
    """The gates' index sets as one (touch, read, cd) triple per line."""
    return tuple(
        (index in gates[0], index in gates[1], index in gates[2])
        for index in range(len(lines_of(command)[0]))
    )


@settings(max_examples=1_500, deadline=None)
@given(st.lists(_PIECES, max_size=40), st.sampled_from([0, 10**9]))
def test_line_gates_are_the_regexes_line_by_line(pieces: list[str], scanned_chars: int) -> None:
    command = "".join(pieces)
    scanned = commands._LINE_GATES is not None
    original = commands._SCANNED_CHARS
    # 0: every command through the scan, short ones too; 10**9: every one through the
    # ``\W``-led patterns (one line or several)
    commands._SCANNED_CHARS = scanned_chars
    try:
        found = commands.gates_of(command)
    finally:
        commands._SCANNED_CHARS = original
    assert _as_lines(command, found) == _per_line(command)
    assert max(found[0] | found[1] | found[2], default=-1) < len(lines_of(command)[0])
    assert scanned or commands._LINE_GATES is None  # the pure path is the regexes


def test_a_long_command_takes_the_scan_and_finds_each_line() -> None:
    if commands._LINE_GATES is None:
        pytest.skip("Hyperscan is not installed or the pure-Python path is forced")
    filler = "\n".join(f"value_{i} = compute({i})" for i in range(20))
    command = f"cd /repo && python -c '\n{filler}\nprint(a > b)\n' | head -5"
    gates = _as_lines(command, line_gates(command))
    assert len(command) >= commands._SCANNED_CHARS
    assert gates == _per_line(command)
    assert gates[-1] == (False, True, False)  # "| head -5": a reader, no writer
    assert gates[-2] == (True, False, False)  # "print(a > b)": ``>`` may redirect
    assert gates[0] == (False, False, True)  # "cd /repo && python -c '"


_STEPS = st.sampled_from([
    "pytest tests/a.py", "pytest", "python -m pytest tests", "git push", "git push origin",
    "git add a.py", "git commit -m x", "make", "ls", "cat a.py", "pip install pytz",
    "python a.py", "cd /r", "npm test", "mix credo", "mix credo --strict", "go test ./...",
])  # fmt: skip


def _event(position: int, steps: list[str], failed: bool, shell: bool) -> ToolEvent:
    command = " && ".join(steps)
    if shell:
        action = ToolAction("bash", ToolKind.SHELL, command, command=command)
    else:
        action = ToolAction("Skill", ToolKind.OTHER, command, path=None)
    result = "Error: boom\nModuleNotFoundError: No module named 'pytz'" if failed else "ok"
    args = {"skill": "handgemacht:push" if "push" in command else command}
    return ToolEvent(position, action, args, result, 1 if failed else 0, failed)


def _derived_cover(self: OpenFailures, step: str, resolved: list[ToolEvent]) -> str:
    """``_cover`` deriving every step's family (before the program gate)."""
    family, targets = operation(step)
    entries = self._by_runner.get(family) if family else None
    if not entries:
        return family
    paths = [t for t in targets if resolution.is_path(t)] if family.startswith("test ") else []
    self._by_runner[family] = self._sweep(
        entries,
        lambda failed: resolution._covered(paths, failed),
        resolved,
        resolution.Reason.SAME_OPERATION,
    )
    return family


def _run(events: list[ToolEvent]) -> tuple[list[list[int]], list[int], list[object]]:
    tracker = OpenFailures()
    resolved = [[e.position for e in tracker.add(event)] for event in events]
    hows = [tracker.how(event) for event in events]
    return resolved, [e.position for e in tracker.events()], hows


@settings(max_examples=800, deadline=None)
@given(
    st.lists(
        st.tuples(st.lists(_STEPS, min_size=1, max_size=3), st.booleans(), st.booleans()),
        max_size=25,
    )
)
def test_skipped_families_resolve_what_derived_ones_did(
    rows: list[tuple[list[str], bool, bool]],
) -> None:
    events = [_event(i, *row) for i, row in enumerate(rows)]
    gated = _run(events)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(OpenFailures, "_cover", _derived_cover)
        derived = _run(events)
    assert gated == derived


def test_the_gate_skips_a_step_of_another_program() -> None:
    tracker = OpenFailures()
    tracker.add(_event(0, ["pytest tests/a.py"], True, True))
    assert tracker._cover("ls -la", []) == ""  # no open failure runs ``ls``
    assert tracker._cover("pytest tests", []) == "test pytest"
    assert re.fullmatch(r"test \w+", operation("pytest")[0])
