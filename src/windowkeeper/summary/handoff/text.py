"""The handoff state as text, and back (:func:`parse_state` reads what :func:`render`
wrote, so the state is carried exactly across compactions).

Each section is ``## <title>`` followed by its lines. Verbatim text (the task, user
messages) sits between fence lines (:mod:`.quoting`), and headings are only looked for
outside fences, so a user's own markdown is never misread. :class:`Shown` says how much
of each part a render shows; :mod:`.fit` chooses it to meet the budget.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, replace
from functools import lru_cache
from typing import TypeVar

from ...analysis.facts import collapse
from .decide import weight
from .model import Command, HandoffState, Quote
from .paths import choose_root, render_paths
from .quoting import fence, item, list_item, quote
from .specs import render_specs
from .valuetext import render_values
from .worktext import render_work

TITLES = (
    "Task", "Task Spec", "User Messages", "Constraints & Preferences", "Work State", "Open Errors",
    "Key Decisions", "Files", "Critical Values", "Next Step", "State Ledger", "Notes",
)  # fmt: skip
NONE = "None recorded."
ALL = 1_000_000
T = TypeVar("T")

ORIGINAL = "Original request, verbatim"
ORIGINAL_IN_HEAD = "Original request: the first user message above, kept verbatim."
OPENING = "It opens:"
OPEN = "Newest request, may still be open, verbatim"
RESTATED = "Newest request: restated verbatim right after this handoff, still in progress."
STATUSES = ("created", "modified", "deleted", "read")
COMMANDS, READ_ONLY = "Commands:", "Read-only commands (counted):"
ERROR_LINES = "Error lines seen (each resolved unless it is under Open Errors):"
EARLIER_COMMANDS = "Earlier commands (counted, not listed):"
COVERED = "Counted through tool call:"
LAST_ACTION = "Last action:"
NO_ERRORS = "None: every failure seen was resolved later (see Fixed along the way)."
_BRIEF_STEP, _BRIEF_ERROR, _BRIEF_FIX = 36, 56, 64
_ARROW = " → "
_SEVERITY = re.compile(r"^(?:\[tool error\]\s*)?(?:fatal|error|err!?)\s*:\s*", re.IGNORECASE)
_FAILED_AS = re.compile(r"(.+?) (exit -?\d+|failed): (.*)", re.DOTALL)
# A summary model summarizes the turns before the cut, reading the tail to write as of its
# end. Its notes sit under this line, after the state extracted at compaction time (tail
# included), never in its place: a reader of the handoff alone must not take work the tail
# finished for work in progress (issue 24: the LLM handoff's misleading answers), and the
# extracted facts (the agent's own decisions with their reasons) stay.
NOTES_BESIDE = (
    "The summary model's notes (from the summarized turns, written as of the end of the "
    "turns kept after this handoff):"
)
TASK_RULES = "The task's own rules (the task is kept verbatim in the context):"
ENVIRONMENT_LABELS = ("Working directory", "Git branch", "Running in the background")


@dataclass(frozen=True)
class Shown:
    """How much of each part a render shows (``ALL``: everything)."""

    task_chars: int = ALL
    spec_chars: int = ALL
    """Each spec's excerpt cut to this many characters (by its excerpt rules)."""
    spec_extra: int = 0
    """Characters the spec of the work in progress shows beyond its excerpt, from its
    whole output (room on top of the budget: :func:`~.fit.with_work_spec`)."""
    users_full: int = ALL
    """The newest this many user messages in full; older ones by their first line."""
    user_line_chars: int = 240
    constraint_chars: int = 600
    task_rules: int = ALL
    """The first this many of the task's rules (the task is verbatim in the context)."""
    done: int = ALL
    evidence: int = ALL
    """The newest this many evidence entries of each work item."""
    fixed: int = ALL
    """The newest this many fixes in full; older ones in brief (error → what worked)."""
    fixed_brief: int = ALL
    """The newest this many of the older fixes in brief (the rest left out)."""
    changes: int = ALL
    """The newest this many edits with what they changed."""
    last_chars: int = ALL
    """Characters of the last action (the agent's words that led to it go first)."""
    decisions: int = ALL
    decision_chars: int = 500
    """A decision and the short reason joined to it (decide.REASON_CHARS)."""
    errors: int = ALL
    error_lines_each: int = 6
    files: int = ALL
    files_read: int = ALL
    values: int = ALL
    commands: int = ALL
    error_lines: int = ALL


# --- rendering -------------------------------------------------------------------------


def render(state: HandoffState, shown: Shown = Shown()) -> str:
    """The handoff body of ``state``; empty sections are left out."""
    parts = [section_text(title, state, shown) for title in TITLES]
    return "\n\n".join(part for part in parts if part)


def section_text(title: str, state: HandoffState, shown: Shown) -> str:
    """One section (``""`` when it has nothing to say)."""
    written = dict(state.written).get(title)
    if written is None:
        body = _RENDERERS[title](state, shown)
    else:
        body = "\n".join(x for x in (_RENDERERS[title](state, shown), NOTES_BESIDE, written) if x)
    if not body:
        return "" if title not in _ALWAYS else f"## {title}\n{NONE}"
    return f"## {title}\n{body}"


def _task(state: HandoffState, shown: Shown) -> str:
    lines: list[str] = []
    if state.task_in_head:
        lines.append(ORIGINAL_IN_HEAD)
        if state.task_opening:
            lines += [OPENING, fence(state.task_opening)]
    elif state.task is not None:
        task = head_tail(state.task, shown.task_chars)
        lines += [_quote_head(ORIGINAL, task), fence(task.text)]
    if state.request_restated:
        lines.append(RESTATED)
    elif state.request is not None:
        lines += [_quote_head(OPEN, state.request), fence(state.request.text)]
    return "\n".join(lines)


def _quote_head(label: str, quoted: Quote) -> str:
    if not quoted.handle:
        return f"{label}:"
    how = "shortened; recall" if quoted.shortened else "recall"
    return f"{label} ({how} {quoted.handle}):"


def _specs(state: HandoffState, shown: Shown) -> str:
    return render_specs(state.specs, shown.spec_chars, shown.spec_extra)


def _users(state: HandoffState, shown: Shown) -> str:
    lines: list[str] = []
    full_from = len(state.users) - shown.users_full
    for index, quoted in enumerate(state.users):
        if index < full_from:
            quoted = first_line(quoted, shown.user_line_chars)
        mark = " (shortened)" if quoted.shortened else ""
        head = f"- {quoted.handle or 'wk?'}{mark}:"
        text = quoted.text
        if "\n" not in text and not text.startswith(("~", " ")) and text == text.strip():
            lines.append(f"{head} {text}")
        else:
            lines += [head, fence(text)]
    return "\n".join(lines)


def head_tail(quoted: Quote, limit: int) -> Quote:
    """A long quote cut to its head and tail (about ``limit`` characters in all)."""
    text = quoted.text
    if len(text) <= limit:
        return quoted
    head = text[: limit * 2 // 3].rstrip()
    tail = text[len(text) - limit // 3 :].lstrip()
    middle = len(text) - len(head) - len(tail)
    return Quote(f"{head}\n[… {middle:,} characters not shown …]\n{tail}", quoted.handle, True)


def first_line(quoted: Quote, limit: int) -> Quote:
    """A user message shortened to its first line (at most ``limit`` characters)."""
    text = quoted.text.strip()
    line = text.split("\n", 1)[0].strip()
    if len(line) > limit:
        line = line[: max(0, limit - 1)].rstrip() + "…"
    if line == text:
        return quoted
    return Quote(line + " …", quoted.handle, True)


def _constraints(state: HandoffState, shown: Shown) -> str:
    lines = [f"- {item(_cut(c, shown.constraint_chars))}" for c in state.constraints]
    rules = state.task_rules[: shown.task_rules]
    if rules:
        lines.append(TASK_RULES)
        lines.extend(f"- {item(_cut(c, shown.constraint_chars))}" for c in rules)
    return "\n".join(lines)


def _work(state: HandoffState, shown: Shown) -> str:
    work = replace(
        state.work, fixed=_fixes(state.work.fixed, shown),
        changes=_newest(state.work.changes, shown.changes),
    )  # fmt: skip
    env = [f"{label}: {item(value)}" for label, value in state.environment]
    return "\n".join(render_work(work, shown.done, shown.evidence, bool(state.covered), env))


def _fixes(fixed: tuple[str, ...], shown: Shown) -> tuple[str, ...]:
    """A fix made under an earlier compaction is still part of the plot ("what broke and
    how did it end?"): older entries are kept in brief before any is left out."""
    whole = _newest(fixed, shown.fixed)
    older = _newest(fixed[: len(fixed) - len(whole)], shown.fixed_brief)
    brief: dict[str, str] = {}
    for entry in map(short_fix, older):
        # The same step failing in turn with the same error (another exit code, say) is
        # one brief entry, its last; another error is another fix, kept apart.
        failure = entry.partition(_ARROW)[0]
        step = _FAILED_AS.match(failure)
        key = f"{step.group(1)}: {step.group(3)}" if step is not None else failure
        brief.pop(key, None)
        brief[key] = entry
    return (*brief.values(), *whole)


def short_fix(entry: str) -> str:
    """An entry in brief: the failing step, the start of its error and the start of its
    fix (the change that fixed it, or what worked). Shortening a short entry changes
    nothing, so an entry a handoff carried in brief stays the same."""
    failure, arrow, fix = entry.partition(_ARROW)
    if not arrow:
        return collapse(entry, _BRIEF_STEP + _BRIEF_ERROR + _BRIEF_FIX)
    step = _FAILED_AS.match(failure)
    if step is not None:
        what, code, error = step.groups()
        error = _SEVERITY.sub("", error)  # "fatal: ", "error: ": the exit code says it failed
        failure = f"{collapse(what, _BRIEF_STEP)} {code}: {collapse(error, _BRIEF_ERROR)}"
    else:
        failure = collapse(failure, _BRIEF_STEP + _BRIEF_ERROR)
    return f"{failure}{_ARROW}{collapse(fix, _BRIEF_FIX)}"


def _errors(state: HandoffState, shown: Shown) -> str:
    if not state.errors and state.work.fixed:
        return NO_ERRORS
    lines: list[str] = []
    # Newest first (the state holds them oldest first, as they happened).
    for error in reversed(_newest(state.errors, shown.errors)):
        what = shown_command(error.command) if error.command else error.what
        status = f" -> exit {error.exit_code}" if error.exit_code is not None else " failed"
        lines.append(f"- {what}{status}")
        lines.extend(f"  {item(line)}" for line in error.lines[-shown.error_lines_each :])
    return "\n".join(lines)


def shown_command(command: str) -> str:
    """A command as the handoff shows it: between backticks, or a JSON string literal
    when it holds a backtick or a line break."""
    if "`" in command or "\n" in command or "\r" in command:
        return quote(command)
    return f"`{command}`"


def _decisions(state: HandoffState, shown: Shown) -> str:
    kept = _reasoned_first(state.decisions, shown.decisions)
    return "\n".join(f"- {item(_cut(d, shown.decision_chars))}" for d in kept)


def _reasoned_first(decisions: tuple[str, ...], count: int) -> tuple[str, ...]:
    """The ``count`` decisions shown, in their order: the heaviest first (``decide.weight``:
    a change's reason, then a limit or an alternative, then any reason), the newest of
    each weight first. A reader asked why the agent chose its approach needs the reason
    and what it changed, not "I'll use that"."""
    if count >= len(decisions):
        return decisions
    return tuple(decisions[i] for i in sorted(_ranked(decisions)[:count]))


# The fitting ladder renders the section for several counts of one state's decisions:
# their ranking (a few regex searches per decision) is made once.
@lru_cache(maxsize=4)
def _ranked(decisions: tuple[str, ...]) -> tuple[int, ...]:
    """Positions of ``decisions``, the heaviest first, the newest of each weight first."""
    return tuple(sorted(range(len(decisions)), key=lambda i: (-weight(decisions[i]), -i)))


def _files(state: HandoffState, shown: Shown) -> str:
    paths = [path for path, _ in state.files]
    root = state.root or choose_root(paths)
    lines = [f"Root: {item(root)}"] if root else []
    unlisted = dict(state.unlisted)
    for status in STATUSES:
        group = tuple(p for p, how in state.files if how == status)
        # A list that must shrink keeps its newest name: "(and 3 more)" alone says nothing.
        limit = max(1, shown.files_read if status == "read" else shown.files)
        if not group and not unlisted.get(status):
            continue
        listed = group[len(group) - min(limit, len(group)) :]
        more = len(group) - len(listed) + unlisted.get(status, 0)
        text = render_paths(listed, root, list_item, quote) if listed else ""
        suffix = f" (and {more} more)" if more else ""
        lines.append(f"{status.capitalize()}: {text}{suffix}".replace(":  (", ": ("))
    return "\n".join(lines)


def _values(state: HandoffState, shown: Shown) -> str:
    values = state.values[len(state.values) - min(shown.values, len(state.values)) :]
    return render_values(values, state.commits)


def _next(state: HandoffState, shown: Shown) -> str:
    if not state.last_action:
        return state.next_step
    last = _cut(state.last_action, shown.last_chars)
    return "\n".join(x for x in (f"{LAST_ACTION} {item(last)}", state.next_step) if x)


def _ledger(state: HandoffState, shown: Shown) -> str:
    lines: list[str] = []
    commands = _newest(state.commands, shown.commands)
    if commands:
        lines.append(COMMANDS)
        lines.extend(map(_command, commands))
    earlier = state.earlier_commands + len(state.commands) - len(commands)
    if earlier:
        lines.append(f"{EARLIER_COMMANDS} {earlier}")
    if state.read_only:
        lines.append(f"{READ_ONLY} " + ", ".join(f"{k} {n}" for k, n in state.read_only))
    kept = _newest(state.error_lines, shown.error_lines)
    if kept:
        lines.append(ERROR_LINES)
        lines.extend(f"- {item(line)}" for line in kept)
    if state.covered:
        lines.append(f"{COVERED} {item(state.covered)}")
    return "\n".join(lines)


def _newest(items: tuple[T, ...], count: int) -> tuple[T, ...]:
    return items[len(items) - min(count, len(items)) :]


def _command(record: Command) -> str:
    code = f" -> exit {record.exit_code}" if record.exit_code is not None else ""
    return f"- {shown_command(record.command)}{code}"


def _notes(state: HandoffState, shown: Shown) -> str:
    return fence(state.notes) if state.notes else ""


def _cut(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: max(0, limit - 1)].rstrip() + "…"


_RENDERERS: dict[str, Callable[[HandoffState, Shown], str]] = dict(
    zip(
        TITLES,
        (_task, _specs, _users, _constraints, _work, _errors, _decisions, _files, _values, _next,
         _ledger, _notes),
        strict=True,
    )
)  # fmt: skip
# Said even when empty: "no open error" is an answer a reader needs.
_ALWAYS = frozenset({"Task", "Work State", "Open Errors"})
