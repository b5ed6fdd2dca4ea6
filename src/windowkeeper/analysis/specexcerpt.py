"""The excerpt a spec output is shortened to (SPEC §6 v3 "task spec"; design §5).

What a continuing agent must not get wrong is what constrains the work: its rules and
no-gos, what "done" means (acceptance, definition of done, the tests asked for), the
technical specs (names of events, functions, fields) and the edge cases. Narrative —
why the work is needed, background, the problem told as a story — helps least once the
work has started. So when a spec must shrink, it keeps, in this order:

1. its first line (the item's id and title);
2. the first line of its goal (a goal / summary / description section);
3. the sections that constrain the work, each whole and in the text's order within a
   class: rules and no-gos, then done criteria and tests, then technical specs, then
   edge cases (a section that does not fit whole keeps the lines that fit, whole lines);
   — a ban or design limit found elsewhere ("keep all logic in X; no new service module",
   "do not add …") ranks with the rules and comes with its section's heading;
4. the rest of the goal, then rule lines found elsewhere (with their section's heading);
5. the first line of a narrative section, then other headings.

Lines are never cut mid-line unless one line alone is longer than
:data:`RULE_LINE_CHARS` (a rule section's) or :data:`LINE_CHARS` (any other); a heading
whose lines were all left out is left out too.
"""

from __future__ import annotations

import functools
import re

from .facts import caseless_search, collapse

SPEC_CHARS = 1_400
"""An excerpt's size in a handoff at the smallest summary budget (see :func:`spec_chars`)."""
SPEC_CHARS_PER_TOKEN = 0.7
"""Characters of each shown spec per token of the summary budget: the spec's share
grows with the window (at 2,000 tokens, the SPEC §6 floor, it is :data:`SPEC_CHARS`)."""
LINE_CHARS = 240
RULE_LINE_CHARS = 480

# A heading: markdown, a line ending with a colon, a line in capitals.
_HEADING = re.compile(r"#{1,6}\s|[A-Z][A-Za-z &/()'-]{2,40}:$|[A-Z][A-Z &/-]{3,}$")
# The classes of sections that constrain the work, strongest first.
_CONSTRAINING = (
    re.compile(
        r"constraint|no-?gos?\b|non-?goals?|out of scope|\brules?\b|\bmust\b|restriction"
        r"|limitation|boundar|guardrail|invariant|do not|don'?t|prohibit|forbidden",
        re.IGNORECASE,
    ),
    re.compile(
        r"acceptance|criteria|definition of done|\bdone\b|success|\btests?\b|testing"
        r"|verification|\bverify|expected|deliverable",
        re.IGNORECASE,
    ),
    re.compile(
        r"spec|requirement|\bapi\b|interface|contract|behaviou?r|implementation|schema"
        r"|protocol|data model|\bevents?\b|\bscope\b",
        re.IGNORECASE,
    ),
    re.compile(
        r"edge|corner|error handling|failure|risk|rabbit hole|caveat|pitfall|gotcha",
        re.IGNORECASE,
    ),
)
_GOAL = re.compile(
    r"goal|objective|purpose|summary|solution|approach|overview|description|intent|outcome",
    re.IGNORECASE,
)
_NARRATIVE = re.compile(
    r"why|background|motivation|context|problem|history|rationale|notes?\b|story",
    re.IGNORECASE,
)
# A line that says what must hold, outside the sections above.
_RULE_LINE = re.compile(
    r"\b(?:goal|must|should|never|always|acceptance|criteria|constraints?|required?|do not"
    r"|don't|only|expected|given|when|then|no-go|definition of done|keep|avoid)\b",
    re.IGNORECASE,
)
# A ban or a design limit (where the logic lives, what not to add), wherever it stands:
# it constrains the work as much as a rules section does.
_LIMIT_LINE = re.compile(
    r"\b(?:must|never|do not|don't|shall not|may not|no (?:new|extra|separate|additional"
    r"|second)|keep (?:all|every|existing)|all (?:the )?logic|(?:not|never) (?:add|introduce"
    r"|create|replace|change|modify))\b",
    re.IGNORECASE,
)
# Both searched lowered in ASCII text (facts.caseless_search: the same answer, faster).
_rule_line, _limit_line = caseless_search(_RULE_LINE), caseless_search(_LIMIT_LINE)
_BULLET = re.compile(r"^(?:[-*+•]|\d{1,3}[.)]|\[[ xX]\])\s+")
_RULER = re.compile(r"(?:-{3,}|\*{3,}|_{3,}|={3,})")
_EXIT_LINE = re.compile(r"<returncode>-?\d+</returncode>|\[?exit code:? -?\d+\]?", re.I)

_FIRST, _GOAL_LINE, _SECTION, _GOAL_REST, _RULE, _NARRATIVE_LINE = 0, 1, 10, 30, 40, 50
_OTHER_HEADING, _REST = 100, 10_000
_PROSE_WORDS = 8


def spec_chars(budget_tokens: int) -> int:
    """The excerpt size of each shown spec for a summary budget of ``budget_tokens``."""
    return max(SPEC_CHARS, int(budget_tokens * SPEC_CHARS_PER_TOKEN))


def spec_excerpt(text: str, limit: int = SPEC_CHARS) -> tuple[str, bool]:
    """The excerpt of a spec output and whether it is shortened: the (cleaned) text when
    it fits ``limit``, else the lines chosen by the module docstring's order, shown in
    the text's order."""
    whole, lines, order, headings = _prepared(text)
    if len(whole) <= limit:
        return whole, False
    chosen: set[int] = set()
    used = 0
    for index in order:
        cost = len(lines[index]) + 1
        if used + cost <= limit:
            chosen.add(index)
            used += cost
    # A heading or a list's lead-in line ("Event behavior:") whose lines were all left
    # out says nothing.
    empty = {h for h, under in headings if under and h in chosen and not chosen & set(under)}
    return "\n".join(lines[i] for i in sorted(chosen - empty)), True


def done_criteria(text: str) -> list[str]:
    """The lines of a spec's done-criteria sections (acceptance, definition of done, the
    tests asked for), in order, each without its bullet."""
    lines = [line.rstrip() for line in text.splitlines() if line.strip()]
    ranks, headings = _priorities(tuple(lines))
    heads = {h for h, _ in headings}
    done = _SECTION + 1  # the second class of _CONSTRAINING
    return [
        _BULLET.sub("", lines[i].strip())
        for i in range(len(lines))
        if ranks[i] == done and i not in heads
    ]


@functools.lru_cache(maxsize=64)
def _prepared(
    text: str,
) -> tuple[str, tuple[str, ...], tuple[int, ...], tuple[tuple[int, tuple[int, ...]], ...]]:
    """The cleaned text, its lines (a long one cut), the order the lines are chosen in,
    and each heading with the lines under it (remembered: the budget ladder asks for
    several limits)."""
    lines = [line.rstrip() for line in text.splitlines()]
    lines = [line for line in lines if line.strip() and not _EXIT_LINE.fullmatch(line.strip())]
    ranks, headings = _priorities(tuple(lines))
    order = sorted((i for i in range(len(lines)) if ranks[i] < _REST), key=lambda i: (ranks[i], i))
    cut = tuple(
        _indented(line, RULE_LINE_CHARS if _SECTION <= ranks[i] < _GOAL_REST else LINE_CHARS)
        for i, line in enumerate(lines)
    )
    return "\n".join(lines), cut, tuple(order), (*headings, *_lead_ins(lines))


def _lead_ins(lines: list[str]) -> list[tuple[int, tuple[int, ...]]]:
    """Each line that ends with a colon and has more indented lines below it, with
    them."""
    found = []
    depths = [len(line) - len(line.lstrip()) for line in lines]
    for index, line in enumerate(lines):
        if line.endswith(":"):
            end = index + 1
            while end < len(lines) and depths[end] > depths[index]:
                end += 1
            if end > index + 1:
                found.append((index, tuple(range(index + 1, end))))
    return found


def _indented(line: str, limit: int) -> str:
    """``line`` on one line, cut to ``limit``, its indentation kept (a nested list stays
    nested)."""
    body = line.lstrip()
    indent = min(len(line) - len(body), 8)
    return " " * indent + collapse(body, limit)


def _section_class(heading: str) -> tuple[str, int]:
    """A heading's class (``"constraining"`` with its strength, ``"goal"``,
    ``"narrative"`` or ``"other"``). A heading that names a narrative (``Why``,
    ``Background``) is narrative even when it also names the work (``Why this spec``)."""
    if _NARRATIVE.search(heading) and not _CONSTRAINING[0].search(heading):
        return "narrative", 0
    for strength, pattern in enumerate(_CONSTRAINING):
        if pattern.search(heading):
            return "constraining", strength
    if _GOAL.search(heading):
        return "goal", 0
    return "other", 0


def _priorities(
    lines: tuple[str, ...],
) -> tuple[tuple[int, ...], tuple[tuple[int, tuple[int, ...]], ...]]:
    """Each line's priority (lower first; :data:`_REST` never chosen), and each heading
    with the lines under it."""
    found: list[int] = []
    sections: list[tuple[int, list[int]]] = []
    kind, strength, depth = "intro", 0, 0
    for index, line in enumerate(lines):
        stripped = line.strip()
        if index and _HEADING.match(stripped):
            kind, strength = _section_class(stripped.lstrip("#").strip())
            depth = 0
            sections.append((index, []))
            found.append(_heading_priority(kind, strength, index))
            continue
        if _RULER.fullmatch(stripped):
            kind, strength = "other", 0  # a horizontal rule ends the section above it
        if sections:
            sections[-1][1].append(index)
        depth += 1
        found.append(_line_priority(index, stripped, kind, strength, depth))
        if kind not in ("constraining", "goal") and found[-1] in (_SECTION, _RULE) and sections:
            heading = sections[-1][0]  # a rule elsewhere comes with its heading
            found[heading] = min(found[heading], found[-1])
    return tuple(found), tuple((h, tuple(under)) for h, under in sections)


def _heading_priority(kind: str, strength: int, index: int) -> int:
    if kind == "constraining":
        return _SECTION + strength
    if kind == "goal":
        return _GOAL_LINE
    if kind == "narrative":
        return _NARRATIVE_LINE
    return _OTHER_HEADING + index


def _line_priority(index: int, line: str, kind: str, strength: int, depth: int) -> int:
    if index == 0:
        return _FIRST
    if kind == "constraining":
        return _SECTION + strength
    if kind == "goal":
        return _GOAL_LINE if depth == 1 else _GOAL_REST
    if kind == "narrative":
        return _NARRATIVE_LINE if depth == 1 else _REST
    if _limit_line(line):
        return _SECTION  # with the rules sections: a limit outside them binds as much
    if _rule_line(line):
        return _RULE
    if kind == "intro" and len(line.split()) >= _PROSE_WORDS:
        return _GOAL_REST  # a spec without headings opens with what it asks for
    return _REST
