"""Mechanical facts read from agent turns: tool events, error lines, identifiers, state hints.

Shared by the state ledger and the extractive summarizer so both describe a transcript
the same way. Everything here is deterministic and bounded: a huge tool output is only
scanned in a head and a tail window, and every pattern is compiled once.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from .handoff import is_real_user, live_text
from .messages import (
    Message,
    call_arguments,
    call_id,
    call_name,
    content_text,
    image_count,
    parsed_arguments,
    tool_calls,
)
from .summarizer import SECTION_TITLES
from .toolshapes import ToolAction, ToolKind, classify_call, exit_code, shorten

WINDOW_CHARS = 4_000
NONE = "None recorded"
"""Placeholder of an empty handoff section."""
ERROR_LINE_CHARS = 200


@dataclass(frozen=True)
class ToolEvent:
    """One tool call paired with its result (``result`` is ``None`` when none was kept).

    An orphan is a tool result whose call is not in the turns; it has no real action.
    """

    position: int
    action: ToolAction
    args: Mapping[str, Any]
    result: str | None
    exit_code: int | None
    failed: bool
    orphan: bool = False


# A result that opens like this failed even when it reports no exit code.
_TOOL_FAILURE = re.compile(
    r"\s*(?:\[tool error\]|<tool_use_error>|(?:error|fatal):|Traceback \(most recent call last\))",
    re.IGNORECASE,
)


def tool_events(turns: Sequence[Message]) -> list[ToolEvent]:
    """Every tool call of ``turns`` in order, paired with its result by ``tool_call_id``."""
    results: dict[str, str] = {}
    for message in turns:
        tid = message.get("tool_call_id")
        if message.get("role") == "tool" and isinstance(tid, str) and tid not in results:
            results[tid] = content_text(message.get("content"))
    events: list[ToolEvent] = []
    called: set[str] = set()
    for position, message in enumerate(turns):
        for call in tool_calls(message):
            cid = call_id(call)
            called.add(cid)
            events.append(_event(position, call, results.get(cid) if cid else None))
        tid = message.get("tool_call_id")
        if message.get("role") == "tool" and isinstance(tid, str) and tid not in called:
            text = content_text(message.get("content"))
            orphan = ToolAction("tool", ToolKind.OTHER, "?")
            events.append(ToolEvent(position, orphan, {}, text, None, _failed(None, text), True))
    return events


def _event(position: int, call: Mapping[str, Any], result: str | None) -> ToolEvent:
    name, args = call_name(call), parsed_arguments(call)
    action = classify_call(name, args)
    raw = call_arguments(call).strip()
    if not args and raw and action.kind is ToolKind.SHELL:
        # Non-JSON arguments of a shell tool are taken as the command line itself.
        args = {"command": raw}
        action = classify_call(name, args)
    code = exit_code(result) if result is not None and action.kind is ToolKind.SHELL else None
    return ToolEvent(position, action, args, result, code, _failed(code, result))


def _failed(code: int | None, result: str | None) -> bool:
    if result is None:
        return False
    if code is not None:
        return code != 0
    return _TOOL_FAILURE.match(result[:200]) is not None


# --- text helpers ----------------------------------------------------------------------


def collapse(text: str, limit: int) -> str:
    """``text`` on one line (whitespace runs collapsed), cut to ``limit`` characters."""
    return shorten(" ".join(text.split()), limit)


def window(text: str, size: int = WINDOW_CHARS) -> str:
    """Head and tail of a long text (whole lines only); the text itself when short."""
    if len(text) <= 2 * size:
        return text
    head = text[:size].rpartition("\n")[0]
    tail = text[-size:].partition("\n")[2]
    return f"{head}\n{tail}"


def dedupe(items: Iterable[str], *, keep_last: bool = False) -> list[str]:
    """Items without repeats, in order of first (or, with ``keep_last``, last) occurrence."""
    if keep_last:
        return list(reversed(dict.fromkeys(reversed(list(items)))))
    return list(dict.fromkeys(items))


def user_texts(turns: Sequence[Message]) -> list[tuple[int, str]]:
    """(position, text) of each real user message; images appear as ``[image]``."""
    found: list[tuple[int, str]] = []
    for position, message in enumerate(turns):
        if is_real_user(message):
            text = live_text(message)
            images = " ".join(["[image]"] * image_count(message))
            found.append((position, f"{text} {images}".strip()))
    return found


_CODE_FENCE = re.compile(r"```.*?(?:```|\Z)", re.DOTALL)
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z\"'`(\[])")
_BULLET = re.compile(r"^(?:[-*+>•]|#{1,6}|\d{1,3}[.)])\s+")


def sentences(text: str) -> list[str]:
    """Sentences and list items of prose (code blocks skipped, bullets stripped)."""
    found: list[str] = []
    for line in _CODE_FENCE.sub("\n", text).splitlines():
        line = _BULLET.sub("", line.strip()).strip()
        if line:
            found.extend(part.strip() for part in _SENTENCE_END.split(line) if part.strip())
    return found


URL = re.compile(r"https?://[^\s<>\"'`\])}]+")


# --- error lines -----------------------------------------------------------------------

_ERROR_LINE = re.compile(
    r"""^[ \t]*(?:
        (?:[A-Za-z_]\w*\.)*(?:[A-Z]\w*)?(?:Error|Exception|Failure)(?::[ \t].*|:?[ \t]*)$
      | (?i:error|fatal|panic|fail)(?:\[[\w-]+\])?:[ \t].*
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
    )""",
    re.MULTILINE | re.VERBOSE,
)


# OpenHands glues its interpreter banner to the last output line.
_PROMPT_TAIL = re.compile(r"\[Python Interpreter: [^\]]*\]\s*$")


def error_lines(text: str) -> list[str]:
    """Exact error lines of a tool output or pasted log (head/tail window, deduped)."""
    found = (_PROMPT_TAIL.sub("", m.group(0)) for m in _ERROR_LINE.finditer(window(text)))
    return dedupe(shorten(line.strip(), ERROR_LINE_CHARS) for line in found)


# Wrapper lines agents put around output: tags, exit banners, prompts.
_NOISE_LINE = re.compile(
    r"\s*(?:</?[\w-]+>.*|\[Command finished.*\]|\((?:Current directory|Open file):.*\)"
    r"|\S*\$|[\w.-]+@[\w.-]+:\S*\s*[#$])\s*"
)


def last_line(text: str, limit: int = 160) -> str:
    """The last meaningful line of a text (wrapper lines skipped), or ``(no output)``."""
    for line in reversed(text[-2_000:].splitlines()):
        if line.strip() and not _NOISE_LINE.fullmatch(line):
            return collapse(line, limit)
    return "(no output)"


# --- shell commands --------------------------------------------------------------------

_PATHY = re.compile(r"[\w.~+@-]*[./][\w./~+@-]*")
_OPERATORS = frozenset({"&&", "||", "|", ";", "&"})


def _segments(command: str) -> list[list[str]]:
    first = command.strip().split("\n", 1)[0]
    try:
        tokens = shlex.split(first)
    except ValueError:
        tokens = first.split()
    segments: list[list[str]] = [[]]
    for token in tokens:
        if token in _OPERATORS:
            segments.append([])
        elif token.endswith(";"):
            segments[-1].append(token.rstrip(";"))
            segments.append([])
        else:
            segments[-1].append(token)
    return [s for s in segments if s]


def _path_like(token: str) -> bool:
    return bool(_PATHY.fullmatch(token)) and not token.startswith("-") and token != "/dev/null"


READ, MODIFIED = "read", "modified"


def file_touches(event: ToolEvent) -> list[tuple[str, str]]:
    """(path, READ or MODIFIED) for each file a call read or changed."""
    action = event.action
    if action.kind is ToolKind.READ and action.path:
        return [(action.path, READ)]
    if action.kind in (ToolKind.WRITE, ToolKind.EDIT) and action.path:
        return [(action.path, MODIFIED)]
    if action.kind is ToolKind.SHELL and action.command:
        return [(path, MODIFIED) for path in shell_written_files(action.command)]
    return []


def shell_written_files(command: str) -> list[str]:
    """Files an obvious shell write touches: redirects, ``sed -i``, ``tee``, ``git mv``."""
    written: list[str] = []
    for tokens in _segments(command):
        for index, token in enumerate(tokens):
            if token in {">", ">>"} and index + 1 < len(tokens):
                written.append(tokens[index + 1])
            elif token.startswith(">") and len(token) > 1 and token[1] not in ">&":
                written.append(token.lstrip(">"))
        head = tokens[0].rsplit("/", 1)[-1]
        if head in {"sed", "perl"} and any(t.startswith("-i") for t in tokens[1:]):
            written.append(tokens[-1])
        elif head == "tee":
            written.extend(t for t in tokens[1:] if not t.startswith("-"))
        elif tokens[:2] == ["git", "mv"] and len(tokens) >= 4:
            written.append(tokens[-1])
    return dedupe(path for path in written if _path_like(path))


_TEST_COMMAND = re.compile(
    r"\b(?:pytest|py\.test|tox|nox|unittest|runtests\.py|manage\.py\s+test"
    r"|(?:npm|yarn|pnpm|bun)\s+(?:run\s+)?test|jest|vitest|mocha|cargo\s+(?:test|nextest)"
    r"|go\s+test|mix\s+test|rspec|phpunit|make\s+(?:test|check)|ctest|mvn\s+test"
    r"|gradlew?\s+test|dotnet\s+test)\b"
)
_TEST_SUMMARY = re.compile(
    r"""^[ \t=]*(
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


def is_test_command(command: str) -> bool:
    return _TEST_COMMAND.search(command) is not None


def test_summary(result: str) -> str | None:
    """The test runner's summary line near the end of its output, if any."""
    lines = [m.group(1).strip() for m in _TEST_SUMMARY.finditer(result[-WINDOW_CHARS:])]
    if not lines:
        return None
    if lines[-1].startswith(("OK", "FAILED")) and len(lines) > 1 and lines[-2].startswith("Ran"):
        return f"{lines[-2]} — {lines[-1]}"
    return shorten(lines[-1], 160)


# --- working state ---------------------------------------------------------------------

_CD = re.compile(r"^\s*cd\s+([^\s;&|]+)\s*(?:&&|;|$)")
_PROMPT_CWD = re.compile(
    r"\(Current directory: ([^)\n]+)\)"
    r"|^[\w.-]+@[\w.-]+:((?:/|~)[^\s#$]*)\s*[#$]|^(/[\w./-]*)\$\s*$",
    re.MULTILINE,
)
_BRANCH_COMMAND = re.compile(
    r"\bgit\s+(?:checkout\s+-[bB]|switch\s+-[cC]|worktree\s+add\s+-b|switch)\s+([\w./-]+)"
)
_BRANCH_OUTPUT = re.compile(r"^(?:On branch|Switched to (?:a new )?branch) '?([\w./-]+)'?", re.M)
_BACKGROUND = re.compile(
    r"(?:^|\s)nohup\s|(?<!&)&\s*$|(?<!&)&\s*(?:disown|echo|sleep)\b|\bsetsid\s"
    r"|\btmux\s+new(?:-session)?\b.*\s-d\b|\bscreen\s+-d"
)


def cwd_hint(event: ToolEvent, previous: str | None) -> str | None:
    """The working directory after a shell call: prompt in the output, ``cd``, or an arg."""
    if event.result:
        found = list(_PROMPT_CWD.finditer(event.result[-WINDOW_CHARS:]))
        if found:
            last = found[-1]
            return (last.group(1) or last.group(2) or last.group(3)).strip()
    match = _CD.match(event.action.command or "")
    if match:
        target = match.group(1)
        if target.startswith(("/", "~")) or previous is None:
            return target
        return f"{previous.rstrip('/')}/{target}"
    for key in ("workdir", "cwd", "working_directory", "dir"):
        value = event.args.get(key)
        if isinstance(value, str) and value.strip():
            return value.strip()
    return None


def branch_hint(event: ToolEvent) -> str | None:
    if event.result:
        found = _BRANCH_OUTPUT.findall(event.result[-WINDOW_CHARS:])
        if found:
            return str(found[-1])
    match = _BRANCH_COMMAND.search(event.action.command or "")
    if match and not match.group(1).startswith("-"):
        return match.group(1)
    return None


def is_background(event: ToolEvent) -> bool:
    if event.args.get("run_in_background") is True:
        return True
    return bool(event.action.command and _BACKGROUND.search(event.action.command.strip()))


# --- exact values ----------------------------------------------------------------------

_VALUE_PATTERNS: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("url", URL),
    ("port", re.compile(r"(?i)(?:\bport\s*:?\s*"
                        r"|\b(?:localhost|127\.0\.0\.1|0\.0\.0\.0):)\d{2,5}\b")),
    ("version", re.compile(
        r"\bv\d+(?:\.\d+)+\b|(?<![\w.])\d+\.\d+\.\d+(?:[-+][\w.]+)?(?![\w.])"
        r"|[=<>~^]=?\s?\d+(?:\.\d+)+|(?i:python|node|django|java|go|ruby|rust|postgres(?:ql)?"
        r"|react|version)\s+\d+(?:\.\d+)+"
    )),
    ("amount", re.compile(
        r"[$€£]\d[\d,]*(?:\.\d+)?|(?<![\w.])\d+(?:\.\d+)?\s?(?:ms|seconds?|secs?|minutes?|mins?"
        r"|hours?|days?|KB|MB|GB|TB|KiB|MiB|GiB|%|px|tokens|chars|characters|lines|rps|qps"
        r"|USD|EUR)(?![\w])"
    )),
    ("env", re.compile(r"(?<![\w$])\$?[A-Z][A-Z0-9]*_[A-Z0-9_]+\b")),
    ("quoted", re.compile(r"(?<!\w)(?:\"[^\"\n]{2,80}\"|'[^'\n]{2,80}'|`[^`\n]{2,80}`)(?!\w)")),
)  # fmt: skip


def exact_values(text: str) -> list[str]:
    """Exact values stated in prose, labelled: ``port: 8080``, ``url: https://...``."""
    prose = _CODE_FENCE.sub("\n", text)
    found: list[tuple[int, str]] = []
    for label, pattern in _VALUE_PATTERNS:
        for match in pattern.finditer(prose):
            value = match.group(0).strip()
            if label == "port":
                value = value.rpartition(":")[2].split()[-1]
            found.append((match.start(), f"{label}: {value.rstrip('.,;:!?*')}"))
    return dedupe(value for _, value in sorted(found))


# --- a previous handoff ------------------------------------------------------------------


_HEADINGS = {t: re.compile(rf"^## {re.escape(t)}[ \t]*\r?$", re.M) for t in SECTION_TITLES}
_BULLET_MARK = re.compile(r"^\s*[-*]\s+")
_OMISSION = re.compile(r"\(\d+ .* omitted for space\)")


def parse_sections(text: str) -> dict[str, str]:
    """Sections of a handoff body by their ``## <title>`` headings.

    Headings are searched from the end: only the verbatim task snapshot (the first
    section) can contain a line that looks like a heading, and it is never misread.
    """
    sections: dict[str, str] = {}
    end = len(text)
    for title in reversed(SECTION_TITLES):
        found = list(_HEADINGS[title].finditer(text, 0, end))
        if found:
            sections[title] = text[found[-1].end() : end].strip("\r\n")
            end = found[-1].start()
    return sections


def section_items(body: str) -> list[str]:
    """List items of a section body (bullets stripped, placeholders skipped)."""
    items = (_BULLET_MARK.sub("", line).strip() for line in body.splitlines())
    return [i for i in items if i and not i.startswith(NONE) and not _OMISSION.fullmatch(i)]


def best_indices(
    items: Sequence[str], count: int, *preferences: Callable[[str], bool] | None
) -> list[int]:
    """Indices of ``count`` items, ascending: preferred items first, then the newest."""
    if count >= len(items):
        return list(range(len(items)))

    def rank(index: int) -> tuple[bool | int, ...]:
        item = items[index]
        return (*(not (p and p(item)) for p in preferences), len(items) - index)

    return sorted(sorted(range(len(items)), key=rank)[: max(0, count)])


def largest_fitting(low: int, high: int, fits: Callable[[int], bool]) -> int | None:
    """The largest value in ``[low, high]`` for which ``fits`` holds (monotone), or None."""
    if high < low or not fits(low):
        return None
    while low < high:
        middle = (low + high + 1) // 2
        if fits(middle):
            low = middle
        else:
            high = middle - 1
    return low
