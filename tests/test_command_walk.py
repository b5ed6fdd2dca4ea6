"""One walk over a command's lines for the files it touches and reads, and heredoc bodies
found with ``list.index`` (issue 27): each gives what the code it replaced gave, compared
on generated commands (the old code is kept here as the reference)."""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence

from hypothesis import example, given, settings
from hypothesis import strategies as st

from windowkeeper.analysis import commands, shellwords, steps
from windowkeeper.analysis.commands import command_files
from windowkeeper.analysis.steps import READ, Touch

# The gates as they were (each led by ``\b``, searched in the line itself).
_OLD_MAY_TOUCH = re.compile(commands._ARROW + "|" + commands._TOUCHER_WORDS)
_OLD_MAY_READ = re.compile(commands._READER_WORDS)
_HEREDOC = re.compile(r"<<-?\s*(['\"]?)([A-Za-z_][\w-]*)\1")


def _rows_one_at_a_time(text: str) -> Iterator[tuple[str, list[str]]]:
    """``heredoc_rows`` as it was: a body's end looked for one row at a time."""
    rows = text.split("\n")
    index = 0
    while index < len(rows):
        line = rows[index]
        index += 1
        bodies: list[str] = []
        for match in _HEREDOC.finditer(line):
            end = match.group(2)
            body: list[str] = []
            while index < len(rows) and rows[index].strip() != end:
                body.append(rows[index])
                index += 1
            index += 1
            bodies.append("\n".join(body))
        if line.strip():
            yield line, bodies


def _gated_steps(
    lines: Sequence[str], cwd: str | None, gate: re.Pattern[str]
) -> Iterator[tuple[Sequence[str], str | None]]:
    here = cwd
    for line in lines:
        gated = gate.search(line) is not None
        if not gated and "cd " not in line:
            continue
        for tokens in shellwords.steps_of(line):
            here = shellwords.step_cwd(tokens, here)
            if gated:
                yield tokens, here


def _touches_walked_alone(command: str, cwd: str | None) -> tuple[Touch, ...]:
    """``command_touches`` as it was, its own walk over the lines."""
    lines, bodies = shellwords.lines_of(command)
    touched: list[Touch] = []
    for tokens, here in _gated_steps(lines, cwd, _OLD_MAY_TOUCH):
        touched.extend(
            (shellwords.joined(p, here), how)
            for p, how in steps.step_touches(tokens)
            if steps.path_like(p)
        )
    touched.extend(commands._script_touches(command, lines, bodies, cwd))
    return tuple(dict.fromkeys(touched))


def _reads_walked_alone(command: str, cwd: str | None) -> tuple[Touch, ...]:
    """``command_reads`` as it was, its own walk over the lines."""
    lines, _ = shellwords.lines_of(command)
    found = [
        (shellwords.joined(p, here), READ)
        for tokens, here in _gated_steps(lines, cwd, _OLD_MAY_READ)
        for p in steps.step_reads(tokens)
    ]
    return tuple(dict.fromkeys(found))


# Words that reach every branch: both gates on one line or apart, `cd` with a space or a
# tab (only the walks whose gate matched follow `cd<TAB>dir`), redirects, in-place edits,
# copies and moves, heredocs (quoted end words, end words with spaces around, none).
_WORDS = st.sampled_from([
    "cat", "grep", "-n", "foo", "sed", "-i", "-n", "'s/a/b/'", "1,4p", "tee", "cp", "mv",
    "rm", "-f", "touch", "git", "checkout", "--", "x.py", "src/y.txt", "../z.md", "dir",
    ">", ">>", ">out.log", "2>&1", "/dev/null", "&&", "||", ";", "|", "cd", "cd\tsub",
    "cd /abs", "head", "wc", "-l", "python", "-c", "\"open('w.txt','w')\"", "<<EOF",
    "<<'END'", "sudo", "timeout", "60", "awk", "'{print}'", "patch", "-p1", "#",
])  # fmt: skip
_LINE = st.lists(_WORDS, min_size=1, max_size=8).map(" ".join)
_BODY = st.lists(
    st.sampled_from(
        ["print(1)", "EOF", "  EOF  ", "END", "x = open('a.txt', 'w')", "", "+++ b/q.py"]
    ),
    max_size=5,
)
_COMMAND = st.lists(st.tuples(_LINE, _BODY), min_size=1, max_size=4).map(
    lambda rows: "\n".join(line + ("\n" + "\n".join(body) if body else "") for line, body in rows)
)


@settings(max_examples=2_000, deadline=None)
@given(_COMMAND, st.sampled_from([None, "/w", "/w/sub"]))
# `cd<TAB>dir` on a line only one reader's gate matches: only that reader follows it.
@example("cd\tsub && tee x.py\ncat y.py", "/w")
@example("cd\tsub && cat a.py\ntee b.py", "/w")
def test_one_walk_matches_each_reader_walking_alone(command: str, cwd: str | None) -> None:
    touched, read = command_files(command, cwd)
    assert touched == _touches_walked_alone(command, cwd)
    assert read == _reads_walked_alone(command, cwd)


@settings(max_examples=2_000, deadline=None)
@given(_COMMAND)
def test_heredoc_bodies_match_the_row_at_a_time_scan(command: str) -> None:
    assert list(shellwords.heredoc_rows(command)) == list(_rows_one_at_a_time(command))
