"""Fixed along the way (SPEC §6 v3 "resolution"): each error a later result resolved,
with what fixed it — the changes the agent made between the failure and the success,
named by what they did (``edited config/test.exs``, ``ran `pip install pytz` ``), and the
success itself (``the re-run passed``, ``git push --set-upstream … ok``), and what the
agent found between the two, in its own words (``the agent's words before it: "The assets
directory is gitignored (build output). `xterm.css` was force-added."``): why the fix is
what it is, which a reader asked "why was it done this way?" needs and a change's name
does not say.

A step that failed again with another error was fixed for the first error: that error is
listed with the changes made before the next attempt, even while the newer error is still
open.
"""

from __future__ import annotations

import bisect
import functools
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from itertools import pairwise

from ...analysis.checks import check_result, is_check_run
from ...analysis.commands import is_bookkeeping, is_read_only, short_command
from ...analysis.events import ToolEvent, remembered
from ...analysis.facts import caseless_search, clued_items, collapse, sentences, word_clues
from ...analysis.gist import is_stub, stub_error
from ...analysis.outputs import error_lines, event_errors, last_line
from ...analysis.resolution import OpenFailures, Reason
from ...analysis.toolshapes import (
    EDIT_KIND,
    OTHER_KIND,
    READ_KIND,
    SHELL_KIND,
    WRITE_KIND,
    change_verb,
)
from .text import shown_command

MAX_FIXED = 10
"""Entries carried from compaction to compaction (the fit shortens older ones first)."""
_SHOWN_CHANGES = 3
WORDS_CHARS = 220
"""The most of the agent's words a fix quotes (its newest sentences)."""


# Lines that only wrap the error that caused them (a compiler's or runner's footer).
_WRAPPER = re.compile(
    r"cannot compile module|errors? have been logged|compilation failed|"
    r"^\d+ (?:tests?|examples?|doctests?)\b|process completed with exit code|"
    r"^error: command failed|^npm err! (?:a complete log|code)|^FAILED \(",
    re.IGNORECASE,
)
_wraps = caseless_search(_WRAPPER)  # lowered in ASCII text: the same answer, faster


_EXIT = re.compile(r"(?i)\[?(?:tool error\]\s*)?exit(?:ed)? (?:code|status):? -?\d+\]?")
_FINDING = re.compile(r"[┃│| ]*\[[A-Z]\]\s+\S")
_HINT = re.compile(r"(?i)(?:hint|note|help|tip):|\W*[\w ]{1,20}:\s*$")
_TELLING = re.compile(
    r"(?i)\b(?:error|fatal|fail|ignored|denied|not found|cannot|can't|unable|invalid|refused"
    r"|conflict|missing|no such|unknown|exceed|did not appear|no replacement|not performed)"
)
# _TELLING's words (facts.Clues): only the lines holding one are searched with it.
_TELLING_CLUES = word_clues(
    "error", "fatal", "fail", "ignored", "denied", "not found", "cannot", "can't", "unable",
    "invalid", "refused", "conflict", "missing", "no such", "unknown", "exceed",
    "did not appear", "no replacement", "not performed",
)  # fmt: skip


def first_error(event: ToolEvent) -> str:
    """The error a failure ends with, its wrapper lines aside (of a pruned result, the
    one its stub kept)."""
    if event.result and is_stub(event.result):
        return collapse(stub_error(event.result).split(" | ")[-1], 160)
    found: str = remembered(event, "first_error", _first_error)
    return found


def _first_error(event: ToolEvent) -> str:
    result = event.result or ""
    echoed = [v for v in event.args.values() if isinstance(v, str) and "\n" in v and v in result]
    if echoed and event.action.kind is not SHELL_KIND:
        # A tool that quotes the call's own text back ("old_str `…` did not appear
        # verbatim"): the error is what it says about that text, not a line of it.
        for text in echoed:
            result = result.replace(text, "…")
        errors = error_lines(result, failed=event.failed)
    else:
        errors = event_errors(event)
    causes = [e for e in errors if not _wraps(e.lstrip("* ").lstrip("(").strip())]
    chosen = (causes or errors)[-1] if errors else _telling_line(result)
    return collapse(chosen, 160)


def _telling_line(result: str) -> str:
    """Of an output without error lines, the last line that says what went wrong (hints
    aside), else its last line."""
    lines = [line.strip() for line in result[-3_000:].splitlines() if line.strip()]
    lines = [line for line in lines if not _HINT.match(line) and not _EXIT.fullmatch(line)]
    finding = next((line for line in lines if _FINDING.match(line)), None)
    if finding:  # a linter's first finding says what it objected to
        return finding.lstrip("┃│| ")
    for line in reversed(clued_items(lines, _TELLING_CLUES)):
        if _TELLING.search(line):
            return line
    return last_line("\n".join(lines)) if lines else last_line(result)


def what_failed(event: ToolEvent, limit: int = 120) -> str:
    """A failed call as the handoff names it: the command, or the tool and its target."""
    action = event.action
    if action.kind is SHELL_KIND and action.command:
        return shown_command(short_command(action.command, limit))
    label = action.name if action.kind is OTHER_KIND else action.kind.value
    return f"{label} {collapse(action.path or action.target, limit)}"


def change_of(event: ToolEvent) -> str | None:
    """What a successful call changed, named for a fix (``None``: it changed nothing),
    computed once per event."""
    found: str | None = remembered(event, "change", _change_of)
    return found


def _change_of(event: ToolEvent) -> str | None:
    if event.result is None or event.failed:
        return None
    action = event.action
    if action.kind in (WRITE_KIND, EDIT_KIND) and action.path:
        return f"{change_verb(action.kind, event.result)} {collapse(action.path, 100)}"
    command = action.command if action.kind is SHELL_KIND else None
    if not command or is_check_run(event) or is_read_only(command) or is_bookkeeping(command):
        return None
    return f"ran `{short_command(command, 60)}`"


@dataclass
class FixLog:
    """Feed every event in order (:meth:`seen`), then ask :meth:`resolved` and
    :meth:`replaced` about the failures the tracker reports; :attr:`fixed` holds the
    entries, oldest first."""

    tracker: OpenFailures
    texts: Sequence[tuple[int, str]] = ()
    """The assistant texts by position, ascending (the agent's words between a failure
    and its fix are quoted with the fix)."""
    fixed: list[str] = field(default_factory=list)
    _index: dict[int, int] = field(default_factory=dict)
    # The events seen, by index. What a call changed is asked only for the events
    # between a failure and what fixed it (most events lie between none).
    _seen: list[ToolEvent] = field(default_factory=list)
    _done: set[int] = field(default_factory=set)

    def seen(self, index: int, event: ToolEvent) -> None:
        """Feed the events in order, ``index`` counting from 0."""
        self._index[id(event)] = index
        self._seen.append(event)

    def resolved(self, success: ToolEvent, failures: Sequence[ToolEvent]) -> None:
        """Entries for the failures ``success`` resolved (each attempt with its own
        error, then the last one with the success)."""
        for failure in failures:
            chain = [*self.tracker.replaced(failure), failure]
            self._attempts(chain)
            if id(failure) not in self._done:
                self._done.add(id(failure))
                fix = self._fix(failure, success)
                if self.tracker.how(failure) is not Reason.INSTALLED:  # that says it all
                    fix += self._words(failure, success, fix)
                self._add(failure, fix, _repeats(chain))

    def replaced(self, failure: ToolEvent) -> None:
        """Entries for the earlier attempts of a step that failed again otherwise."""
        self._attempts([*self.tracker.replaced(failure), failure])

    def _attempts(self, chain: Sequence[ToolEvent]) -> None:
        for count, (older, newer) in enumerate(pairwise(chain), 1):
            if id(older) in self._done or first_error(older) == first_error(newer):
                continue
            self._done.add(id(older))
            changes = self._between(older, newer)
            fix = f"fixed by: {changes}; the next run failed otherwise" if changes else ""
            self._add(older, fix or "the next run failed otherwise", _repeats(chain[:count]))

    def _fix(self, failure: ToolEvent, success: ToolEvent) -> str:
        how = self.tracker.how(failure)
        changes = self._between(failure, success)
        by = f"fixed by: {changes}; " if changes else ""
        if how is Reason.MOVED_ON:
            target = collapse(success.action.path or success.action.target, 100)
            same = target == collapse(failure.action.path or failure.action.target, 100)
            return f"{by}a later call on it succeeded" if same else f"moved on: {_did(success)}"
        if success.action.kind is not SHELL_KIND:
            return f"{by}{_did(success)}"
        ran = shown_command(short_command(success.action.command or "", 70))
        if how is Reason.INSTALLED:
            return f"installed: {ran} ok"
        if how is Reason.COMMIT:
            return f"{by}committed with {ran}"
        if how is Reason.OPERATION:
            return f"done instead with {ran} ok"
        if is_check_run(success):
            return f"{by}{ran} then {check_result(success)}"
        return f"{by}{ran} then ok"

    def _words(self, failure: ToolEvent, success: ToolEvent, fix: str) -> str:
        """What the agent found after ``failure`` up to the call that fixed it, in its own
        words: its newest statements (steps it announces, apologies, questions and
        lead-ins to a list aside), quoted when one of them names something of the
        failure or the fix (words about another matter are not this fix's reason)."""
        # A carried failure (no position here) has only the fixing message's own words.
        low = failure.position if failure.position >= 0 else success.position - 2
        start = bisect.bisect_right(self._text_at, low)
        end = bisect.bisect_right(self._text_at, success.position, start)
        said = [s for _, text in self.texts[start:end] for s in _statements(text)]
        kept: list[str] = []
        for sentence in reversed(said):
            if kept and sum(map(len, kept)) + len(sentence) > WORDS_CHARS:
                break
            kept.insert(0, sentence)
        about = _names(f"{what_failed(failure)} {first_error(failure)} {fix}")
        if not kept or not about.intersection(_names(" ".join(kept))):
            return ""
        words = collapse(" ".join(kept), WORDS_CHARS)
        return f"; the agent's words before it: {_quoted(words)}"

    @functools.cached_property
    def _text_at(self) -> list[int]:
        return [position for position, _ in self.texts]

    def _between(self, older: ToolEvent, newer: ToolEvent) -> str:
        start, end = self._index.get(id(older), -1), self._index.get(id(newer), -1)
        if start < 0 or end <= start:
            return ""
        found = (change_of(event) for event in self._seen[start + 1 : end])
        changes = list(dict.fromkeys(change for change in found if change is not None))
        if not changes:
            return ""
        more = len(changes) - _SHOWN_CHANGES
        return ", ".join(changes[-_SHOWN_CHANGES:]) + (f" (+{more} earlier)" if more > 0 else "")

    def _add(self, failure: ToolEvent, fix: str, tries: int = 1) -> None:
        code = f"exit {failure.exit_code}" if failure.exit_code is not None else "failed"
        error = collapse(first_error(failure), 140)
        # Every failed attempt counts ("the first two edits failed"), not only the last.
        again = f" (the same error in {tries} attempts)" if tries > 1 else ""
        entry = f"{what_failed(failure, 80)} {code}: {error}{again} → {fix}"
        self.fixed[:] = [e for e in self.fixed if e != entry][-(MAX_FIXED * 2) :]
        self.fixed.append(entry)


# A sentence that only announces the agent's next step or reacts ("Let me check …",
# "Now I'll …", "Perfect!", "I apologize …"): it says nothing of what the agent found.
# Nor does a plan ("I need to use `:auto` mode"): the fix itself may differ from it (the
# agent then set another mode), and the fix is named by what it changed.
_ANNOUNCES = re.compile(
    r"(?:let me|let's|now\b|next\b|first\b|then\b|i'll|i will|i'm going to|i am going"
    r"|time to|ok\b|okay|great|perfect|good|excellent|done\b|alright|i apologi[sz]e|sorry"
    r"|apologies|(?:i|we) (?:need|should|must|have to|want|can|could|might|may)\b)",
    re.IGNORECASE,
)
_announces = caseless_search(_ANNOUNCES, at_start=True)  # lowered in ASCII text: faster
_NAME = re.compile(r"[a-z0-9]{4,}")
# Words of a failure or a fix that name no particular thing.
_PLAIN = frozenset((
    "error", "errors", "failed", "fails", "failure", "exit", "code", "then", "edited", "wrote",
    "with", "that", "this", "from", "moved", "fixed", "file", "files", "line", "lines", "call",
    "none", "true", "false", "more", "earlier", "next",
))  # fmt: skip


def _names(text: str) -> set[str]:
    """The words of ``text`` that can name a thing (a file, a command, a setting)."""
    return set(_NAME.findall(text.lower())) - _PLAIN


def _statements(text: str) -> list[str]:
    return [
        s for s in sentences(text[:20_000])
        if len(s) >= 16 and s[-1] not in "?:" and not _announces(s)
    ]  # fmt: skip


def _quoted(words: str) -> str:
    """The agent's words between double quotes (inner ones made single)."""
    return '"' + words.replace('"', "'") + '"'


def _repeats(chain: Sequence[ToolEvent]) -> int:
    """How many attempts at the end of ``chain`` failed with its last one's error."""
    last, count = first_error(chain[-1]), 0
    for event in reversed(chain):
        if first_error(event) != last:
            break
        count += 1
    return count


def _did(event: ToolEvent) -> str:
    action = event.action
    changed = action.kind in (WRITE_KIND, EDIT_KIND)
    verb = change_verb(action.kind, event.result) if changed else action.name
    verb = "read" if action.kind is READ_KIND else verb
    return f"{verb} {collapse(action.path or action.target, 100)} ok"


def merged_fixed(previous: Sequence[str], new: Sequence[str]) -> tuple[str, ...]:
    """The carried entries and the new ones, each once, the newest :data:`MAX_FIXED`."""
    merged = list(dict.fromkeys([*previous, *new]))
    return tuple(merged[-MAX_FIXED:])
