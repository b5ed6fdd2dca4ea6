"""Hostile shell commands and outputs: every reader of a command line takes any text.

The shell readers (words, heredocs, working directories, writers, patches, what a
command's output reports) see whatever an agent typed. Here command lines are drawn
from shell syntax in pieces (quotes left open, heredocs without an end, redirections
without a target, ``cd`` into nothing, patch programs with any options) and outputs
from what patch, git and test runners print, mixed with any text. What must hold: no
reader raises, and a whole compaction of a session of such calls keeps every invariant.
"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import HealthCheck, find, given, settings
from hypothesis import strategies as st

from factories import assistant, call, system, tool, user
from windowkeeper.analysis.commands import (
    command_reads,
    command_touches,
    heredoc_files,
    is_read_only,
    program_of,
    short_command,
    written_patches,
)
from windowkeeper.analysis.patches import applied_patches, diff_targets, written_by_tool
from windowkeeper.analysis.reported import patched_files, reported_touches
from windowkeeper.analysis.shellwords import final_cwd, lines_of, steps_of
from windowkeeper.core.invariants import violations
from windowkeeper.engine.compressor import ContextCompressor

Message = dict[str, Any]

_PIECES = (
    "cd", "cd ..", "cd /tmp", "cd -", "git apply", "git apply -v", "git apply --check",
    "patch -p1", "patch -i", "patch <", "sed -i", "sed -i.bak 's/a/b/'", "cat >", "cat <<",
    "<<'EOF'", "<<-EOF", "<<\"E\"", "EOF", "E", "tee -a", "cp", "mv", "rm -rf", "sudo -u",
    "env -u", "timeout -s", "nice -n", "xargs", "python -c", "python3 - <<PY", "PY", "bash -c",
    "&&", "||", ";", "|", ">", ">>", "2>&1", "<", "&", "(", ")", "{", "}", "$(", "`", "'", '"',
    "\\", "\n", "\t", "#", "*", "~", "=", "A=1", "--", "-", "-p0", "fix.patch", "a b.py",
    "src/app.py", "/abs/path.txt", "./x", "..", ".", "\x00", "\x1b[31m", "é", "\u202e",
    "--- a/x.py", "+++ b/x.py", "@@ -1 +1 @@", "diff --git a/x b/x", "-" * 3, "+" * 3,
)  # fmt: skip
_OUTPUT_PIECES = (
    "patching file ", "Applied patch ", " cleanly.", " with conflicts.", "Hunk #1 FAILED",
    "1 out of 1 hunk FAILED", "can't find file to patch", "error: patch failed: ",
    "Checking patch ", "modified:   ", "new file:   ", "deleted:    ", "renamed: a -> b",
    "Traceback (most recent call last):", "  File \"x.py\", line 1", "ValueError: bad",
    "FAILED tests/test_x.py::test_y", "[exit code 1]", "<returncode>2</returncode>", "\n",
    "\r\n", "\x00", "src/app.py", "a b.py", "-> ", "'", '"', "\u202e", "é", " ",
)  # fmt: skip

_command_pieces = st.one_of(st.sampled_from(_PIECES), st.text(max_size=12))
_command = st.lists(_command_pieces, max_size=24).map(" ".join)
_output_pieces = st.one_of(st.sampled_from(_OUTPUT_PIECES), st.text(max_size=12))
_output = st.lists(_output_pieces, max_size=30).map("".join)


@settings(max_examples=500, deadline=None)
@given(_command, _output, st.sampled_from([None, "/repo", "", "rel/dir", "/"]))
def test_every_shell_reader_takes_any_command(command: str, output: str, cwd: Any) -> None:
    lines, bodies = lines_of(command)
    assert isinstance(lines, list | tuple) and isinstance(bodies, list | tuple)
    for line in lines:
        steps_of(line)
    final_cwd(lines, cwd)
    for what, path in (*command_touches(command, cwd), *command_reads(command, cwd)):
        assert what and path, (what, path)
    heredoc_files(command, cwd)
    written_patches(command, cwd)
    applied_patches(command, cwd)
    assert isinstance(is_read_only(command), bool)
    assert len(short_command(command)) <= 160
    program_of(command)
    patched_files(command, output)
    reported_touches(command, output)
    diff_targets(command + "\n" + output)
    written_by_tool({"path": output[:20], "content": command, "new_str": output})


@pytest.mark.parametrize(
    "reached",
    [
        lambda pair: bool(lines_of(pair[0])[1]),  # a heredoc body
        lambda pair: bool(command_touches(pair[0], None)),
        lambda pair: bool(command_reads(pair[0], None)),
        lambda pair: bool(applied_patches(pair[0], None)[0]),
        lambda pair: bool(patched_files(pair[0], pair[1])),
    ],
    ids=["heredoc", "touches", "reads", "applied patch", "patched files"],
)
def test_the_generated_commands_reach_the_readers(reached: Any) -> None:
    """The readers do not only see text they reject at once (passing means something)."""
    search = settings(max_examples=20_000, database=None)
    assert reached(find(st.tuples(_command, _output), reached, settings=search))


@st.composite
def shell_session(draw: st.DrawFn) -> list[Message]:
    messages: list[Message] = [system(), user("Apply the fix and keep the tests green.")]
    for n in range(draw(st.integers(min_value=1, max_value=12))):
        cid = f"call_{n}"
        if draw(st.booleans()):
            made = call(cid, "bash", command=draw(_command))
        else:
            made = call(cid, "write_file", path=draw(_command)[:40], content=draw(_output))
        messages.append(assistant(draw(st.sampled_from([None, "Trying a patch."])), made))
        messages.append(tool(cid, draw(_output) + "x" * draw(st.integers(0, 3_000))))
    messages.append(user("Where are we?"))
    return messages


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(shell_session(), st.sampled_from([2_000, 4_000, 16_000]))
def test_a_session_of_hostile_shell_calls_compacts_cleanly(
    messages: list[Message], window: int
) -> None:
    result = ContextCompressor(context_length=window).compress(messages, force=True)
    assert violations(result.messages) == []
    assert result.messages[-1] == messages[-1]  # the newest user message is kept
