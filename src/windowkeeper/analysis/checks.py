"""Checks: shell commands that test, lint or build the work, and what their output says.

A reader of a handoff asks "what is the latest test / lint / build state?": the answer is
the newest run of each check target with its result line. A target is the command as the
agent would run it again: the steps that run a check, without ``cd`` prefixes, output
redirections and the pipes that only trim the output (``mix test 2>&1 | tail -5`` is the
target ``mix test``).
"""

from __future__ import annotations

import re

from .events import ToolEvent, remembered
from .facts import caseless_search, collapse
from .gist import is_stub
from .installs import missing_names
from .outputs import error_lines, is_test_command, last_line, test_summary
from .readings import UNREAD, reading
from .shellwords import segment_texts, segments
from .toolshapes import SHELL_KIND

# Linters and formatters in check mode, type checkers: the program (and subcommand).
_LINT = re.compile(
    r"(?:^|\s)(?:mix\s+(?:credo|format\s+--check-formatted|dialyzer)|ruff(?:\s+check)?"
    r"|flake8|pylint|mypy|pyright|black\s+--check|isort\s+--check|eslint|prettier\s+--check"
    r"|rubocop|golangci-lint|go\s+vet|cargo\s+clippy|cargo\s+fmt\s+--check|shellcheck"
    r"|tsc\s+--noEmit|stylelint|hadolint|biome\s+(?:check|lint))(?:\s|$)"
)
_BUILD = re.compile(
    r"(?:^|\s)(?:mix\s+compile|cargo\s+(?:build|check)|go\s+build|make(?:\s+[\w.-]+)?|tsc"
    r"|npm\s+run\s+build|yarn\s+(?:run\s+)?build|pnpm\s+(?:run\s+)?build|mvn\s+\w*\s*package"
    r"|gradlew?\s+build|dotnet\s+build|cmake\s+--build|python\s+-m\s+build|vite\s+build"
    r"|webpack|next\s+build)(?:\s|$)"
)
# The program each alternative of ``_LINT`` / ``_BUILD`` starts with: a whole word there
# (whitespace or the start before it, whitespace or the end after it), so a step none of
# whose words is one cannot match and is not searched.
_LINT_PROGRAMS = frozenset({
    "mix", "ruff", "flake8", "pylint", "mypy", "pyright", "black", "isort", "eslint",
    "prettier", "rubocop", "golangci-lint", "go", "cargo", "shellcheck", "tsc", "stylelint",
    "hadolint", "biome",
})  # fmt: skip
_BUILD_PROGRAMS = frozenset({
    "mix", "cargo", "go", "make", "tsc", "npm", "yarn", "pnpm", "mvn", "gradle", "gradlew",
    "dotnet", "cmake", "python", "vite", "webpack", "next",
})  # fmt: skip
_PROGRAMS = _LINT_PROGRAMS | _BUILD_PROGRAMS
_STARTED = re.compile(r"\s*Command running in background|\s*Started background", re.I)
_MORE_TESTS = re.compile(r"-m\s+django\s+test\b|django-admin\s+test\b")
# What every match of _MORE_TESTS holds, led by a literal the engine skips ahead to
# (_MORE_TESTS itself is tried at every position of a command that names django).
_DJANGO_TEST = re.compile(r"django(?:-admin)?\s+test\b")
_BACKGROUND = re.compile(r"&\s*$|\bnohup\b|run_in_background")
# Pipes that only shorten or filter what the agent reads of the output.
_TRIM = re.compile(r"\s*\|\s*(?:tail|head|grep|less|cat|tee|sed|awk|cut|sort|uniq)\b[^|]*")
_REDIRECT = re.compile(r"\s+\d?>&\d|\s+\d?>>?\s*/dev/null|\s+2>&1")
# The line a linter or build ends with that says how it went.
_VERDICT = re.compile(
    r"\b(?:no issues|found \d+|\d+ (?:errors?|warnings?|problems?|issues?|offenses?)"
    r"|all checks passed|success(?:fully)?|compiled|generated|finished|no errors"
    r"|everything is ok|0 errors)\b",
    re.IGNORECASE,
)
_says_verdict = caseless_search(_VERDICT)  # lowered in ASCII: the same answer, faster


def check_kind(command: str) -> str | None:
    """``"tests"``, ``"lint"`` or ``"build"`` for a command that runs that check (the
    newest such step decides), else ``None``; judged by the command's first 2,000
    characters and remembered in the command's record (agents run the same checks
    again, each run an event of its own)."""
    record = reading(command)
    found = record.check_kind
    if found is UNREAD:
        found = record.check_kind = _check_kind(command[:2_000])
    return found


def _check_kind(head: str) -> str | None:
    if _runs_in_background(head):
        return None  # its output is not its result
    # every match of _DJANGO_TEST holds "django" (str.find scans it faster than the engine)
    django = "django" in head and _DJANGO_TEST.search(head) is not None
    if is_test_command(head) or (django and _MORE_TESTS.search(head)):
        return "tests"
    for step in reversed(segment_texts(head)):
        # A step with no pipe and no redirect is its own stripped form (segments are
        # collapsed): none of its words a check program, it is no check (most steps of
        # an inline script), and is not remembered.
        if "|" not in step and ">" not in step and _PROGRAMS.isdisjoint(step.split(" ")):
            continue
        kind = _step_check(step)
        if kind is not None:
            return kind
    return None


def _step_check(segment: str) -> str | None:
    """``"lint"`` or ``"build"`` for one step (:func:`.shellwords.segments`) that runs
    that check, else ``None``; remembered in the step's record: the steps of a script an
    agent runs again and again (its ``cd``, its lines) recur from command to command."""
    record = reading(segment)
    found = record.step_check
    if found is UNREAD:
        found = record.step_check = _step_kind(segment)
    return found


def _step_kind(segment: str) -> str | None:
    step = _strip(segment)
    words = step.split(" ")  # _strip leaves one space between words
    if not _LINT_PROGRAMS.isdisjoint(words) and _LINT.search(" " + step):
        return "lint"
    if (
        not _BUILD_PROGRAMS.isdisjoint(words)
        and _BUILD.search(" " + step)
        and not step.startswith(("make -n", "make --dry"))
    ):
        return "build"
    return None


def check_target(command: str) -> str:
    """The check as it would be run again: its steps without ``cd``, redirections and
    trimming pipes, joined by ``&&`` (at most 120 characters)."""
    steps = [_strip(s) for s in segments(command[:2_000])]
    kept = [s for s in steps if s and not s.startswith(("cd ", "echo ", "export "))]
    return collapse(" && ".join(kept) or command, 90)


def _runs_in_background(head: str) -> bool:
    # each alternative of the pattern needs one of these: most commands skip it
    maybe = "nohup" in head or "run_in_background" in head or head.rstrip().endswith("&")
    return maybe and _BACKGROUND.search(head) is not None


def _strip(step: str) -> str:
    # every trimming pipe holds a "|" and every redirection a ">": most steps skip both
    if "|" in step:
        step = _TRIM.sub("", step)
    if ">" in step:
        step = _REDIRECT.sub("", step)
    return " ".join(step.split())


def is_check_run(event: ToolEvent) -> str | None:
    """The check a finished shell call ran (``None``: none, or it runs in the
    background and its output is not its result), computed once per event."""
    found: str | None = remembered(event, "check_run", _check_run)
    return found


def _check_run(event: ToolEvent) -> str | None:
    command = event.action.command if event.action.kind is SHELL_KIND else None
    if not command or event.result is None or event.args.get("run_in_background") is True:
        return None
    if _STARTED.match(event.result[:200]):
        return None
    return check_kind(command)


def check_result(event: ToolEvent) -> str:
    """``passed (…)`` / ``failed (exit N: …)`` for a check run, with the line that says how
    it went (a test summary, a linter's verdict, the last line). A run whose exit code a
    pipe hides (``pytest | head``) failed when its output says the runner or a module is
    missing, or ends in an error with no test summary. Computed once per event."""
    found: str = remembered(event, "check_result", _check_result)
    return found


def _check_result(event: ToolEvent) -> str:
    result = event.result or ""
    # Of a pruned result, what its stub kept.
    summary = _stub_gist(result) if is_stub(result) else _test_summary(event) or _verdict(result)
    if event.failed:
        code = f"exit {event.exit_code}" if event.exit_code is not None else "failed"
        return f"failed ({code}{': ' + summary if summary else ''})"
    hidden = _hidden_failure(event, result, summary)
    if hidden:
        return f"failed (the exit code was piped away: {hidden})"
    return f"passed ({summary})" if summary else "passed"


def _test_summary(event: ToolEvent) -> str | None:
    """The test summary line of the event's result, computed once per event."""
    found: str | None = remembered(event, "test_summary", lambda e: test_summary(e.result or ""))
    return found


def _stub_gist(stub: str) -> str:
    """The test summary or error lines a stub kept."""
    for part in stub.rsplit(" (ref wk", 1)[0].split("; ")[1:]:
        label, _, value = part.partition(": ")
        if label in ("tests", "error"):
            return collapse(value, 120)
    return ""


def check_passed(event: ToolEvent) -> bool:
    return check_result(event).startswith("passed")


def hidden_failure(event: ToolEvent) -> str:
    """The error line of a piped command that failed although it exited 0 (``""``: it
    did not, as far as its output says)."""
    if event.failed or "|" not in (event.action.command or ""):
        return ""  # what _hidden_failure answers first: no test summary read for it
    return _hidden_failure(event, event.result or "", _test_summary(event) or "")


def _hidden_failure(event: ToolEvent, result: str, summary: str) -> str:
    """The error line of a piped check run that failed although it exited 0."""
    if event.failed or "|" not in (event.action.command or "") or is_stub(result):
        return ""
    if _test_summary(event):
        return ""
    if missing_names(result):
        errors = error_lines(result, failed=True)
        return collapse(errors[-1], 160) if errors else collapse(last_line(result), 160)
    errors = error_lines(result[-2_000:], failed=False)
    return collapse(errors[-1], 160) if errors and not summary else ""


def _verdict(result: str) -> str:
    lines = [line for line in result[-3_000:].splitlines() if line.strip()]
    for line in reversed(lines[-12:]):
        if _says_verdict(line) and "explain" not in line:
            return collapse(line, 120)
    tail = last_line(result, 120)
    return "" if tail == "(no output)" else tail
