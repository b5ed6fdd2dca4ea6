"""One reading of each command (issue 27): the readers that now share a step's program
words and facts (remembered per distinct step), and the check kind judged a step at a time
(remembered per step), give what each reader gave when it read the command on its own."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from windowkeeper.analysis import checks, commands, shellwords, steps
from windowkeeper.analysis.outputs import is_test_command
from windowkeeper.analysis.shellwords import lines_of, segments, steps_of
from windowkeeper.analysis.writers import in_place

# Programs of every reader's branches (reading, writing, tracker, housekeeping, checks),
# runners in front of them, redirects, separators, heredocs and line breaks.
_PIECES = st.sampled_from([
    "cat x.py", "grep -n a b.py", "sed -i s/a/b/ f.py", "sed -n 1p f.py", "git status",
    "git commit -m m", "git", "ls", "bd show x", "bd update x --status closed", "gh pr view",
    "gh issue create", "mkdir d", "chmod +x s.sh", "sudo ", "timeout 60 ", "X=1 ", "env ",
    "python -m ", "python t.py", "pytest -q", "ruff check .", "make", "make -n", "go vet",
    "cargo build", "npm run build", "python -m build", "tsc --noEmit", "rm f", "cp a b",
    " > out.txt", " 2>&1", " 2>/dev/null", " | tail -5", " | head", " && ", " || ", "; ",
    "\n", " & ", "cd /r && ", "cat <<EOF\nbody\nEOF\n", " ", "echo hi", "nohup x &", "'",
    '"', ">", "<", "perl -pi -e s/a/b/ f", "2>err", "&>log", "django-admin test",
])  # fmt: skip


def _old_program_words(tokens: tuple[str, ...]) -> list[str]:
    return list(steps.program_words(tokens))


def _old_reads_only(tokens: tuple[str, ...]) -> bool:
    words = steps.unredirected(steps.program_words(tokens))
    if not words:
        return True
    head = words[0].rsplit("/", 1)[-1]
    if head in {"cd", "export", "set", "source", "."}:
        return True
    if head == "git":
        verbs = [w for w in words[1:] if not w.startswith("-")]
        return bool(verbs) and verbs[0] in commands._GIT_READ_ONLY
    if head in {"sed", "perl"}:
        return not any(in_place(t, head) for t in words[1:])
    return head in commands._READ_ONLY


def _old_is_read_only(command: str) -> bool:
    lines, bodies = lines_of(command)
    if bodies or not lines or len(command) > shellwords.SCAN_CHARS:
        return False
    touching = {i for i, line in enumerate(lines) if commands._MAY_TOUCH.search(" " + line)}
    for index, line in enumerate(lines):
        if index in touching and any(steps.step_touches(tokens) for tokens in steps_of(line)):
            return False
        for tokens in steps_of(line):
            if not _old_reads_only(tokens):
                return False
    return True


def _old_book_step(tokens: tuple[str, ...]) -> bool | None:
    words = steps.unredirected(steps.program_words(tokens))
    head = words[0].rsplit("/", 1)[-1] if words else ""
    if head in commands._HOUSEKEEPING:
        return True
    if head in commands._TRACKERS:
        verbs = [w for w in words[1:] if not w.startswith("-")][:2]
        state = any(part in commands._STATE_WORDS for w in words[1:] for part in w.split("="))
        return True if any(v in commands._TRACKER_BOOKS for v in verbs) and not state else None
    return False if _old_reads_only(tokens) else None


def _old_is_bookkeeping(command: str) -> bool:
    lines, bodies = lines_of(command)
    if bodies or not lines or len(command) > shellwords.SCAN_CHARS:
        return False
    kinds = [_old_book_step(tokens) for line in lines for tokens in steps_of(line)]
    return None not in kinds and any(kinds)


def _old_check_kind(command: str) -> str | None:
    """``check_kind`` as it was: every step stripped first, then judged newest first."""
    head = command[:2_000]
    if checks._runs_in_background(head):
        return None
    if is_test_command(head) or (
        checks._DJANGO_TEST.search(head) and checks._MORE_TESTS.search(head)
    ):
        return "tests"
    for step in reversed([checks._strip(s) for s in segments(head)]):
        words = step.split(" ")
        if not checks._LINT_PROGRAMS.isdisjoint(words) and checks._LINT.search(" " + step):
            return "lint"
        if (
            not checks._BUILD_PROGRAMS.isdisjoint(words)
            and checks._BUILD.search(" " + step)
            and not step.startswith(("make -n", "make --dry"))
        ):
            return "build"
    return None


@settings(max_examples=1_500, deadline=None)
@given(st.lists(_PIECES, max_size=12))
def test_the_shared_step_reading_is_each_readers_own(pieces: list[str]) -> None:
    command = "".join(pieces)
    assert commands.is_read_only(command) is _old_is_read_only(command)
    assert commands.is_bookkeeping(command) is _old_is_bookkeeping(command)
    assert checks.check_kind(command) == _old_check_kind(command)
    for line in lines_of(command)[0]:
        for tokens in steps_of(line):
            words, head, plain, plain_head = steps.step_program(tokens)
            assert list(words) == _old_program_words(tokens)
            assert head == (words[0].rsplit("/", 1)[-1] if words else "")
            assert list(plain) == steps.unredirected(words)
            # the shared record holds immutable values only
            assert type(words) is tuple and type(plain) is tuple
            assert plain_head == (plain[0].rsplit("/", 1)[-1] if plain else "")


def test_a_long_command_is_judged_by_its_head_and_remembered_steps_agree() -> None:
    # Past 2,000 characters a check is judged by the head alone (as before).
    assert checks.check_kind("ruff check . && " + "x" * 3_000) == "lint"
    assert checks.check_kind("echo " + "x" * 2_100 + " && ruff check .") is None
    # A step remembered from one command judges it the same in another.
    assert checks.check_kind("cd a && make") == "build"
    assert checks.check_kind("make && cat x") == "build"
    assert checks.check_kind("cat x | tail -3 && mypy src 2>&1 | head") == "lint"
    assert commands.is_bookkeeping("bd show x && ls") is True
    assert commands.is_bookkeeping("ls && bd show x") is True
    assert commands.is_bookkeeping("ls") is False
