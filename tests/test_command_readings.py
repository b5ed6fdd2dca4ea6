"""The one cache of command readings (issue 27): bounded, one record per distinct text
shared by every reader, each field filled once; the readers through it give what they
give computed afresh, and the gates that spare work (a script's literals) give what the
code they replaced gave (kept here as the reference)."""

from __future__ import annotations

import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from windowkeeper.analysis import checks, commands, readings, shellwords, steps, writers


@pytest.fixture
def cold() -> None:
    readings.forget()


def test_the_cache_never_holds_more_than_its_bound(cold: None) -> None:
    bound = readings.READINGS_KEPT
    # each command is its own line, and its one step a record of its own: two a command
    for index in range(bound):
        commands.is_read_only(f"cat f{index}.py")
        assert readings.kept() <= bound
    assert readings.kept() == bound
    # the least recently used went first: the newest command is still a hit
    newest = f"cat f{bound - 1}.py"
    before = readings.reading.cache_info().hits
    assert commands.is_read_only(newest) is True
    assert readings.reading.cache_info().hits == before + 1
    # and a dropped one reads the same when it is asked again
    assert commands.command_files("cat f0.py", "/w") == ((), (("/w/f0.py", "read"),))
    assert readings.kept() <= bound


def test_every_reader_of_a_text_shares_its_one_record(cold: None) -> None:
    command = "cd /r && grep -n x a.py | head"
    commands.command_files(command, "/w")
    records = readings.kept()
    # the other readers of the command, its line and its steps find their records
    commands.is_read_only(command)
    commands.is_bookkeeping(command)
    commands.program_of(command)
    checks.check_kind(command)
    shellwords.segments(command)
    shellwords.steps_of(command)
    assert readings.kept() == records + 1  # "cd /r": a segment no step record had
    record = readings.reading(command)
    assert (record.lines, record.bodies) == ((command,), ())
    assert record.steps == (("cd", "/r"), ("grep", "-n", "x", "a.py"), ("head",))
    assert record.read_only is True and record.program == "grep"


def test_a_reading_that_depends_on_the_directory_is_made_for_each_one_asked(cold: None) -> None:
    command = "cat a.py && cat <<'EOF' > p.diff\n+++ b/q.py\nEOF"
    at_w = commands.command_files(command, "/w")
    at_v = commands.command_files(command, "/v")
    assert at_w[1][0] == ("/w/a.py", "read") and at_v[1][0] == ("/v/a.py", "read")
    assert commands.command_files(command, "/w") == at_w
    assert commands.written_patches(command, "/w") == (("/w/p.diff", ("q.py",)),)
    assert commands.written_patches(command, None) == (("p.diff", ("q.py",)),)


def test_a_field_is_unread_until_its_reader_asks(cold: None) -> None:
    record = readings.reading("ls -la")
    assert record.read_only is readings.UNREAD and record.check_kind is readings.UNREAD
    assert commands.is_read_only("ls -la") is True
    assert record.read_only is True and record.check_kind is readings.UNREAD


_OLD_RUBY = re.compile(r"""(?:File|IO)\.write\(\s*(['"])([^'"\n]+)\1""")


def _old_script_writes(body: str) -> list[str]:
    """``script_writes`` as it was: the Ruby pattern run on any ``.write(`` and the
    variables looked for in any script that holds a hint."""
    hints = [h for h in writers.SCRIPT_HINTS if h not in ("File.write(", "IO.write(")]
    if not any(word in body for word in [*hints, ".write("]):
        return []
    found = [
        (match.start(), match.group(group))
        for hints_, pattern, group in writers._LITERAL_WRITES
        if pattern.pattern != _OLD_RUBY.pattern and any(h in body for h in hints_)
        for match in pattern.finditer(body)
    ]
    if ".write(" in body:
        found += [(m.start(), m.group(2)) for m in _OLD_RUBY.finditer(body)]
    variables = [
        (m.start(), m.group(1) or m.group(3)) for m in writers._VARIABLE_WRITES.finditer(body)
    ]
    if variables:
        values = {m.group(1): m.group(3) for m in writers._ASSIGN.finditer(body)}
        found += [(at, values[name]) for at, name in variables if name in values]
    return [path for _, path in sorted(found)]


_SCRIPT = st.sampled_from([
    "f.write(x)", "File.write('a.rb', s)", "IO.write(\"b.txt\", s)", "File.write(", "IO",
    "open('o.txt', 'w')", "p = 'v.py'", "open(p, 'w')", "Path(p).write_text(s)",
    "Path('w.md').write_bytes(b)", "shutil.copy(a, 'c.py')", "fs.writeFileSync('n.js')",
    "open my $fh, '>', 'pl.txt'", "\n", " ", "'", '"', "write_", "Bun.write('b.ts')",
])  # fmt: skip


@settings(max_examples=1_500, deadline=None)
@given(st.lists(_SCRIPT, max_size=12))
def test_a_scripts_writes_are_the_old_patterns(pieces: list[str]) -> None:
    body = "".join(pieces)
    assert writers.script_writes(body) == _old_script_writes(body)


_PIECES = st.sampled_from([
    "cat x.py", "grep -n a b.py", "sed -i s/a/b/ f.py", "tee o.md", "cd /r", "cd sub",
    "python -c \"", "open('w.txt', 'w')", "print(a > b)", "ruff check .", "make", "\n",
    " && ", " | head", "; ", " > out.txt", "bd show x", "mkdir d", "x = 1", "git status",
])  # fmt: skip


@settings(max_examples=800, deadline=None)
@given(st.lists(_PIECES, max_size=16), st.sampled_from([None, "/w"]))
def test_the_cached_readings_are_the_fresh_ones(pieces: list[str], cwd: str | None) -> None:
    command = "".join(pieces)
    asked = (
        commands.command_files(command, cwd),
        commands.is_read_only(command),
        commands.is_bookkeeping(command),
        checks.check_kind(command),
        commands.program_of(command),
        shellwords.segments(command),
        [steps.step_program(t) for line in shellwords.lines_of(command)[0]
         for t in shellwords.steps_of(line)],
    )  # fmt: skip
    readings.forget()
    fresh = (
        commands._command_files(command, cwd),
        commands._is_read_only(command),
        commands._is_bookkeeping(command),
        checks._check_kind(command[:2_000]),
        commands._program_of(command),
        list(shellwords.split_segments(command)),
        [steps._program(t) for line in shellwords.split_lines(command)[0]
         for t in shellwords.tokenized(line)],
    )  # fmt: skip
    assert asked == fresh
