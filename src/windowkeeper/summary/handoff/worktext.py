"""The Work State section as text, and back: :func:`parse_work` reads exactly what
:func:`render_work` wrote (the next compaction continues from it).

A work item is one line, ``- <id> "<title>": <status> — <evidence>; <evidence>``: the
status is derived from the evidence (so it is not read back), the title is a JSON string
and an evidence entry holding ``;`` is one too.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from functools import lru_cache

from .items import item_status
from .model import WorkItem, WorkState
from .quoting import inline_list, item, parse_list, quote, unquote

AS_OF = "As of compaction time (the turns kept after this handoff included):"
ITEMS = "Work items (state from tool results):"
LATEST = "Latest results (the newest run of each check, newest first):"
FIXED = "Fixed along the way (error → fix):"
CHANGES = "Newest changes (the first changed lines, old → new; newest first):"
DONE, UNVERIFIED = "Done (with evidence):", "Claimed, not verified:"
IN_PROGRESS, PENDING, EARLIER = "In progress:", "Pending:", "Done earlier (condensed):"
# An older handoff listed spec excerpts here; they are the Task Spec section's now, and
# the lines under this heading are read as no part of the work state.
_OLD_SPECS = "Specs (what the task and the open items ask for):"
_BLOCKS = (ITEMS, LATEST, CHANGES, FIXED, DONE, UNVERIFIED, IN_PROGRESS, PENDING, _OLD_SPECS)
_EVIDENCE_SEP = "; "
_MORE = re.compile(r"\d+ more steps?")
_DASH = " — "


def render_work(
    work: WorkState, done_shown: int, evidence_shown: int, covered: bool, env: Sequence[str]
) -> list[str]:
    """The section's lines: ``done_shown`` newest done items, ``evidence_shown`` newest
    evidence entries per work item, the environment lines ``env``."""
    lines = [AS_OF] if covered else []
    lines += env
    done = work.done[len(work.done) - min(done_shown, len(work.done)) :]
    earlier = dict(work.earlier)
    for dropped in work.done[: len(work.done) - len(done)]:
        verb = dropped.split(" ", 1)[0].lower()
        earlier[verb] = earlier.get(verb, 0) + 1
    if work.items:
        lines.append(ITEMS)
        lines.extend(_item_lines(work.items, evidence_shown))
    if work.latest:
        lines.append(LATEST)
        lines.extend(f"- {item(entry)}" for entry in reversed(work.latest))
    if work.changes:
        lines.append(CHANGES)
        lines.extend(f"- {item(entry)}" for entry in reversed(work.changes))
    if work.fixed:
        lines.append(FIXED)
        lines.extend(f"- {item(entry)}" for entry in work.fixed)
    if earlier:
        counts = ", ".join(f"{verb} {count}" for verb, count in earlier.items())
        lines.append(f"{EARLIER} {counts}")
    for label, items in ((DONE, done), (UNVERIFIED, work.unverified),
                         (IN_PROGRESS, work.in_progress), (PENDING, work.pending)):  # fmt: skip
        if items:
            lines.append(label)
            lines.extend(f"- {item(entry)}" for entry in items)
    return lines


# Which evidence a short render keeps first: the step its status comes from (so the
# status reads back the same), the commit, the files it changed (what "which files did
# that item change?" needs; the status already says it was pushed or closed), the other
# tracker steps, its test result, then the other checks and commands run.
_RANK = {"committed": 1, "merged": 1, "edited": 2, "wrote": 2, "pushed": 3, "closed": 3,
         "tests": 4, "lint": 5, "build": 5, "ran": 6}  # fmt: skip
_STATUS_STEP = 0
WORKING_EVIDENCE = 6
"""Evidence entries an item in progress keeps at least (the one a reader continues)."""


def _kept(
    evidence: tuple[str, ...], shown: int, status_step: str = ""
) -> tuple[tuple[str, ...], int]:
    """The ``shown`` most telling entries, in their order, and how many steps are left
    out (counting those an earlier render left out); ``status_step``: the verb of the
    step the item's status comes from, kept first."""
    hidden = [e for e in evidence if _MORE.fullmatch(e)]
    steps = tuple(e for e in evidence if e not in hidden)
    earlier = sum(int(e.split(" ", 1)[0]) for e in hidden)
    if shown >= len(steps):
        return steps, earlier

    def rank(i: int) -> tuple[int, int]:
        verb = _verb(steps[i])
        return (_STATUS_STEP if verb == status_step else _RANK.get(verb, 6)), -i

    ranked = sorted(range(len(steps)), key=rank)
    keep = set(ranked[:shown])
    return tuple(e for i, e in enumerate(steps) if i in keep), earlier + len(steps) - shown


def _verb(entry: str) -> str:
    return entry.split(" ", 1)[0]


# The fitting ladder renders the section for several counts of done items and of
# evidence: the item lines of one count are made once.
@lru_cache(maxsize=8)
def _item_lines(items: tuple[WorkItem, ...], shown: int) -> tuple[str, ...]:
    return tuple(_item_line(work_item, shown) for work_item in items)


def _item_line(work_item: WorkItem, shown: int) -> str:
    title = f" {quote(work_item.title)}" if work_item.title else ""
    status = item_status(work_item)
    if status.startswith("in progress"):
        shown = max(shown, WORKING_EVIDENCE)
    evidence, more = _kept(work_item.evidence, shown, status.rpartition(" ")[2])
    # The steps left out are counted as a step of their own (it reads back as written).
    entries = (f"{more} more step{'s' if more > 1 else ''}", *evidence) if more else evidence
    listed = inline_list(entries, _EVIDENCE_SEP)
    return f"- {work_item.id}{title}: {status}{_DASH if listed else ''}{listed}"


def parse_work(lines: Sequence[str]) -> WorkState:
    """The work state of a Work State section's lines (see :func:`render_work`)."""
    groups: dict[str, list[str]] = {}
    earlier: tuple[tuple[str, int], ...] = ()
    current: list[str] | None = None
    items: list[WorkItem] = []
    for line in lines:
        if line.startswith(EARLIER):
            earlier = tuple((k.strip(), int(n)) for k, n in _counts(line[len(EARLIER) :]))
        elif line in _BLOCKS:
            current = groups.setdefault(line, [])
        elif line.startswith("- ") and current is groups.get(ITEMS) and current is not None:
            parsed = parse_item(line[2:])
            if parsed is not None:
                items.append(parsed)
        elif line.startswith("- ") and current is not None:
            current.append(unquote(line[2:]))
    return WorkState(
        tuple(groups.get(DONE, ())), tuple(groups.get(UNVERIFIED, ())),
        tuple(groups.get(IN_PROGRESS, ())), tuple(groups.get(PENDING, ())), earlier,
        tuple(items), tuple(reversed(groups.get(LATEST, ()))), tuple(groups.get(FIXED, ())),
        tuple(reversed(groups.get(CHANGES, ()))),
    )  # fmt: skip


def _counts(text: str) -> list[tuple[str, str]]:
    found = []
    for part in text.split(", "):
        name, _, count = part.strip().rpartition(" ")
        if name and count.isdigit():
            found.append((name, count))
    return found


def parse_item(text: str) -> WorkItem | None:
    """A work item line (without its ``- ``), or ``None`` when it is not one."""
    ident, sep, rest = text.partition(" ")
    title = ""
    if ident.endswith(":"):
        ident, rest = ident[:-1], rest
    elif sep and rest.startswith('"'):
        try:
            value, end = json.JSONDecoder().raw_decode(rest)
        except ValueError:
            return None
        title, rest = str(value), rest[end:].removeprefix(":").lstrip()
    else:
        return None
    _, dash, listed = rest.partition(_DASH)
    if not dash:
        return WorkItem(ident, title, ())
    evidence = tuple(value for value, _ in parse_list(listed, _EVIDENCE_SEP))
    return WorkItem(ident, title, evidence)
