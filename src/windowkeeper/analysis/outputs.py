"""What tool outputs and prose say: exact error lines, test results, exact values.

Every scan is bounded (head and tail windows of a long text) and every pattern compiled
once.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable

from ..core.hint_scan import literal_scanner
from ..core.secret_hints import has_folded_letters
from .events import ToolEvent, remembered
from .facts import CODE_FENCE, URL, WINDOW_CHARS, collapse, dedupe, folded, window
from .toolshapes import shorten

ERROR_LINE_CHARS = 200


# --- error lines -----------------------------------------------------------------------

# Matched after a line break (the text is scanned with one prepended), so the engine jumps
# from line to line; group 1 is the line.
_ERROR_LINE = re.compile(
    r"""\n([ \t]*(?:
        (?:[A-Za-z_]\w*\.)*(?:[A-Z]\w*)?(?:Error|Exception|Failure)(?::[ \t].*|:?[ \t]*)$
      | (?i:error|fatal|panic|fail)(?:\[[\w-]+\])?:[ \t].*
      | (?i:error)[ \t]+[A-Z]{1,4}\d{2,5}:[ \t].*
      | \S+?:\d+:(?:\d+:)?[ \t]*(?:(?i:fatal[ ]error|error)\b|\w*(?:Error|Exception)\b).*
      | \S+\(\d+,\d+\):[ \t]*error\b.*
      | (?:FAILED|ERROR)[ \t]+[\w/.\\-]+.*
      | E[ \t]{2,}.*(?:assert|Error|Exception|[Ff]ailed|not[ ]found|[Ee]xpected).*
      | npm[ ](?:ERR!|error)[ \t].*
      | (?:ba|z)?sh:[ \t].*(?:command[ ]not[ ]found|No[ ]such[ ]file|Permission[ ]denied).*
      | \*\*[ ]\([\w.]+\)[ \t].*
      | thread[ ]'.*'[ ]panicked[ ]at.*
      | Exception[ ]in[ ]thread[ ].*
      | Caused[ ]by:[ \t].*
      | ---[ ]FAIL:[ \t].*
    ))""",
    re.MULTILINE | re.VERBOSE,
)


# OpenHands glues its interpreter banner to the last output line.
_PROMPT_TAIL = re.compile(r"\[Python Interpreter: [^\]]*\]\s*$")


_TRACEBACK = re.compile(r"^Traceback \(most recent call last\)|^\S.*\bpanicked at\b", re.M)
# Every error line holds one of these (in lower case): texts without any are skipped.
_ERROR_WORDS = (
    "error", "exception", "fail", "fatal", "panic", "e  ", "e \t", "e\t", "npm ", "sh:", "** (",
    "caused by:",
)  # fmt: skip
_ERROR_SCAN = literal_scanner(_ERROR_WORDS)


def _error_matches(text: str) -> list[re.Match[str]]:
    """``_ERROR_LINE`` matches, tried only on lines that hold an error word."""
    if _ERROR_SCAN is not None and not has_folded_letters(text) and "\u0307" not in text:
        starts = {text.rfind("\n", 0, at) + 1 for at in _ERROR_SCAN.starts(text)}
    else:
        found = _probed_starts(text)
        if found is None:  # case folding moved characters: scan every line
            lined = "\n" + text
            return list(_ERROR_LINE.finditer(lined)) if _has_error_word(folded(text)) else []
        starts = found
    # A line starting at ``start`` > 0 follows the line break at ``start - 1``; the first
    # line is matched after one put before it (never a copy of the whole text).
    found_matches = (
        _ERROR_LINE.match(text, start - 1) if start else _first_line_match(text)
        for start in sorted(starts)
    )
    return [match for match in found_matches if match]


_PROBE_CHARS = 1_024
"""Lower-cased at a time (whole lines): ``str.lower`` of a non-ASCII text allocates three
times four bytes per character at once, ~100 KB for a window of 8,000."""


def _probed_starts(text: str) -> set[int] | None:
    """The line starts of the lines holding an error word, found in lower-cased pieces of
    ``text`` (whole lines, so every piece lowers as it does inside the whole text);
    ``None`` when case folding moved characters."""
    starts: set[int] = set()
    begin = 0
    while begin < len(text):
        cut = text.find("\n", begin + _PROBE_CHARS)
        end = len(text) if cut < 0 else cut + 1
        probe = folded(text[begin:end])
        if len(probe) != end - begin:
            return None
        for word in _ERROR_WORDS:
            at = probe.find(word)
            while at >= 0:
                starts.add(begin + probe.rfind("\n", 0, at) + 1)
                line_end = probe.find("\n", at)
                at = probe.find(word, line_end) if line_end >= 0 else -1
        begin = end
    return starts


def _first_line_match(text: str) -> re.Match[str] | None:
    end = text.find("\n")
    return _ERROR_LINE.match("\n" + (text if end < 0 else text[:end]))


def _has_error_word(probe: str) -> bool:
    return any(word in probe for word in _ERROR_WORDS)


def error_lines(text: str, *, failed: bool = True) -> list[str]:
    """Exact error lines of a tool output or pasted log (head/tail window, deduped).

    Without failure context (``failed`` false and no traceback in the text) only lines
    that start at the very beginning of a line count: an indented ``x.FooError: 1`` in a
    diff or a source listing is not an error the agent hit.
    """
    scanned = window(text)
    matches = _error_matches(scanned)
    if not matches:
        return []
    strict = not failed and not _has_traceback(scanned)
    found = (
        _PROMPT_TAIL.sub("", m.group(1))
        for m in matches
        if not (strict and m.group(1)[:1] in " \t")
    )
    return dedupe(shorten(line.strip(), ERROR_LINE_CHARS) for line in found)


def event_errors(event: ToolEvent) -> list[str]:
    """Error lines of a tool result (with the event's failure context), computed once."""
    return list(remembered(event, "errors", _event_errors))


def _event_errors(event: ToolEvent) -> tuple[str, ...]:
    return tuple(error_lines(event.result, failed=event.failed)) if event.result else ()


def _has_traceback(text: str) -> bool:
    if "Traceback (most recent call last)" not in text and "panicked at" not in text:
        return False
    return _TRACEBACK.search(text) is not None


# Wrapper lines agents put around output: tags, exit banners, prompts.
_NOISE_LINE = re.compile(
    r"\s*(?:</?[\w-]+>.*|\[Command finished.*\]|\((?:Current directory|Open file):.*\)"
    r"|\[(?:tool error\]\s*)?(?i:exit(?:ed)?\s+(?:code|status)):?\s*-?\d+\]?"
    r"|\S*\$|[\w.-]+@[\w.-]+:\S*\s*[#$])\s*"
)


def last_line(text: str, limit: int = 160) -> str:
    """The last meaningful line of a text (wrapper lines skipped), or ``(no output)``."""
    for line in reversed(text[-2_000:].splitlines()):
        if line.strip() and not _NOISE_LINE.fullmatch(line):
            return collapse(line, limit)
    return "(no output)"


# Test runner invocations (whole words), each with the literal it starts with: a command
# is only searched for the runners whose literal it contains. The word-boundary check
# follows the first character, so the regex engine finds candidates fast.
_TEST_RUNNERS = tuple(
    (word, re.compile(rf"{pattern[0]}(?<!\w{pattern[0]}){pattern[1:]}\b"))
    for word, pattern in (
        ("tox", "tox"), ("nox", "nox"), ("jest", "jest"), ("mocha", "mocha"),
        ("rspec", "rspec"), ("phpunit", "phpunit"), ("make", r"make\s+(?:test|check)"),
        # Each of these holds "test" right after whitespace or one of ``_BEFORE_TEST``.
        ("pytest", "pytest"), ("py.test", r"py\.test"), ("unittest", "unittest"),
        ("runtests.py", r"runtests\.py"), ("manage.py", r"manage\.py\s+test"),
        ("npm", r"npm\s+(?:run\s+)?test"), ("yarn", r"yarn\s+(?:run\s+)?test"),
        ("pnpm", r"pnpm\s+(?:run\s+)?test"), ("bun", r"bun\s+(?:run\s+)?test"),
        ("vitest", "vitest"), ("cargo", r"cargo\s+(?:test|nextest)"), ("go", r"go\s+test"),
        ("mix", r"mix\s+test"), ("ctest", "ctest"), ("mvn", r"mvn\s+test"),
        ("gradle", r"gradlew?\s+test"), ("dotnet", r"dotnet\s+test"),
    )
)  # fmt: skip
_WITHOUT_TEST = 7
_BEFORE_TEST = frozenset("y.tnicx")
# Words a runner's "test" can follow after whitespace.
_TEST_VERBS = (
    "manage.py", "npm", "yarn", "bun", "run", "cargo", "go", "mix", "mvn", "gradle", "gradlew",
    "dotnet",
)  # fmt: skip
# A line start is the newline before it (the text is searched with one put in front):
# the engine then jumps from newline to newline instead of trying ``^`` at every
# character (~25 ns a character, most of a test output's gist).
_TEST_SUMMARY = re.compile(
    r"""\n[ \t=]*(
        (?:\d+[ ](?:passed|failed|errors?|skipped|xfailed|xpassed|deselected|warnings?)
          (?:,[ ])?)+.*?
      | no[ ]tests[ ]ran.*?
      | Ran[ ]\d+[ ]tests?[ ]in[ ][\d.]+s
      | (?:OK|FAILED)(?:[ ]\(.*\))?
      | test[ ]result:[ ].*?
      | Tests?:[ \t]+.*total.*?
      | (?:\d+[ ]\w+,[ ])*\d+[ ]tests?,[ ]\d+[ ]failures?.*?
      | (?:ok|FAIL)[ \t]+\S+.*?
    )[ \t=]*$""",
    re.MULTILINE | re.VERBOSE,
)


@functools.lru_cache(maxsize=1_024)
def is_test_command(command: str) -> bool:
    """Whether a shell command runs tests (remembered: asked once per consumer)."""
    if _runs(_TEST_RUNNERS[:_WITHOUT_TEST], command):
        return True
    at = command.find("test")
    while at >= 0:
        if at and _may_run_tests(command, at):
            return _runs(_TEST_RUNNERS[_WITHOUT_TEST:], command)
        at = command.find("test", at + 4)
    return False


def _may_run_tests(command: str, at: int) -> bool:
    """Whether the "test" at ``at`` can end a test runner invocation."""
    before = command[at - 1]
    if before in _BEFORE_TEST:
        return True
    if not before.isspace():
        return False
    head = command[max(0, at - 64) : at].rstrip()
    return not head or head.endswith(_TEST_VERBS)


def _runs(runners: tuple[tuple[str, re.Pattern[str]], ...], command: str) -> bool:
    # A loop, not ``any()`` of a generator: ~10 runners a command, each a generator step.
    for word, pattern in runners:  # noqa: SIM110 (the loop is the point)
        if word in command and pattern.search(command):
            return True
    return False


def test_summary(result: str) -> str | None:
    """The test runner's summary line near the end of its output, if any."""
    text = "\n" + result[-WINDOW_CHARS:]
    lines = [m.group(1).strip() for m in _TEST_SUMMARY.finditer(text)]
    if not lines:
        return None
    if lines[-1].startswith(("OK", "FAILED")) and len(lines) > 1 and lines[-2].startswith("Ran"):
        return f"{lines[-2]} — {lines[-1]}"
    return shorten(lines[-1], 160)


# Each pattern starts with a literal or a character class (look-behinds follow the first
# character) so the regex engine skips ahead fast; the rarer shapes are gated by a hint.
_PORT_WORDS = ("port", "localhost", "127.0.0.1:", "0.0.0.0:")


def _may_name_port(text: str) -> bool:
    probe = folded(text)
    return any(word in probe for word in _PORT_WORDS)


_VERSION_HINT = re.compile(r"\.\d(?<=\d\.\d)")
_ENV_HINT = re.compile(r"_(?<=[A-Z0-9]_)")
_VALUE_PATTERNS: tuple[tuple[str, re.Pattern[str], Callable[[str], object] | None], ...] = (
    ("url", URL, None),
    ("port", re.compile(r"(?i)(?:\bport\s*:?\s*"
                        r"|\b(?:localhost|127\.0\.0\.1|0\.0\.0\.0):)\d{2,5}\b"),
     _may_name_port),
    ("version", re.compile(
        r"\bv\d+(?:\.\d+)+\b|(?<![\w.])\d+\.\d+\.\d+(?:[-+][\w.]+)?(?![\w.])"
        r"|[=<>~^]=?\s?\d+(?:\.\d+)+|(?i:python|node|django|java|go|ruby|rust|postgres(?:ql)?"
        r"|react|version)\s+\d+(?:\.\d+)+"
    ), _VERSION_HINT.search),
    ("amount", re.compile(
        r"[$€£\d](?:(?<=[$€£])\d[\d,]*(?:\.\d+)?|(?<![\w.]\d)(?<=\d)\d*(?:\.\d+)?\s?"
        r"(?:ms|seconds?|secs?|minutes?|mins?|hours?|days?|KB|MB|GB|TB|KiB|MiB|GiB|%|px|tokens"
        r"|chars|characters|lines|rps|qps|USD|EUR)(?![\w]))"
    ), None),
    ("env", re.compile(r"(?<![\w$])\$?[A-Z][A-Z0-9]*_[A-Z0-9_]+\b"),
     _ENV_HINT.search),
    ("quoted", re.compile(
        r"[\"'`](?<!\w[\"'`])(?:(?<=\")[^\"\n]{2,80}\"|(?<=')[^'\n]{2,80}'|(?<=`)[^`\n]{2,80}`)"
        r"(?!\w)"
    ), None),
)  # fmt: skip


def exact_values(text: str) -> list[str]:
    """Exact values stated in prose, labelled: ``port: 8080``, ``url: https://...``."""
    prose = CODE_FENCE.sub("\n", window(text))
    found: list[tuple[int, str]] = []
    for label, pattern, hint in _VALUE_PATTERNS:
        if hint is not None and not hint(prose):
            continue
        for match in pattern.finditer(prose):
            value = match.group(0).strip()
            if label == "port":
                value = value.rpartition(":")[2].split()[-1]
            found.append((match.start(), f"{label}: {value.rstrip('.,;:!?*')}"))
    return dedupe(value for _, value in sorted(found))
