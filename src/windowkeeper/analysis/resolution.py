"""Which failures a later success resolved, tracked in one pass over the tool events.

A failed tool call stays open until the same call (same kind and target) runs again, or,
for a shell command, until a later successful shell call shows it is fixed: it re-ran the
failing command as one of its steps, or it ran the same operation over what failed: a
test run with the same runner, or another command with the same program and subcommand
(``git push`` after ``git push`` failed, whatever the options), over either no paths or
paths containing every failing target.

What must hold: the cost is linear in the events. Open failures are indexed by their
normalized command and, for test runs, by their runner, so a success only looks at the
failures it could resolve; never at every open failure (which made long sessions
quadratic: failures × successes).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field

from .commands import is_read_only
from .events import ToolEvent
from .facts import collapse
from .outputs import error_lines, is_test_command
from .shellwords import lines_of
from .toolshapes import ToolKind

Key = tuple[ToolKind, str]
_ENV_PREFIX = re.compile(r"^(?:[A-Za-z_]\w*=\S*\s+)+(?=\S)")
_SUBCOMMAND = re.compile(r"[A-Za-z][\w-]*")
_STEP_SEPARATORS = re.compile(r"&&|\|\||;|\n")


def segments(command: str) -> list[str]:
    """The steps of a shell command line (``&&``, ``;``, ``||`` and line breaks; heredoc
    bodies are not steps), each normalized: words collapsed, leading environment
    assignments dropped (``PYTHONPATH=. python t.py`` runs ``python t.py``)."""
    lines = lines_of(command)[0] if "<<" in command else [command]
    return [
        _ENV_PREFIX.sub("", " ".join(part.split()))
        for line in lines
        for part in _STEP_SEPARATORS.split(line)
        if part.strip()
    ]


def positional(command: str) -> tuple[str, list[str]]:
    """The program of a command and its non-option arguments."""
    words = command.split()
    return (words[0] if words else ""), [w for w in words[1:] if not w.startswith("-")]


def is_path(word: str) -> bool:
    return "/" in word or "." in word.rpartition("/")[2]


def event_key(event: ToolEvent) -> Key:
    """Calls with the same key are the same operation run again."""
    return event.action.kind, collapse(event.action.target, 200)


@dataclass
class _Open:
    event: ToolEvent
    failed_paths: tuple[str, ...]


@dataclass
class OpenFailures:
    """Feed events in order with :meth:`add`; :meth:`events` are the failures still open."""

    _open: dict[Key, ToolEvent] = field(default_factory=dict)
    _by_command: dict[str, list[tuple[Key, ToolEvent]]] = field(default_factory=dict)
    _by_runner: dict[str, list[tuple[Key, _Open]]] = field(default_factory=dict)
    # The failures each open failure replaced (the same step failing before it, oldest
    # first): what was tried is part of the plot even once the newest error is the state.
    _replaced: dict[int, tuple[ToolEvent, ...]] = field(default_factory=dict)

    def add(self, event: ToolEvent) -> list[ToolEvent]:
        """Record ``event``; return the open failures it resolved (oldest first)."""
        if event.result is None:
            return []
        key = event_key(event)
        rerun = self._open.pop(key, None)
        if counts_as_failure(event):
            older = self._supersede(event)
            if rerun is not None and rerun not in older:
                older.append(rerun)
            chain = [e for o in sorted(older, key=_position) for e in (*self.replaced(o), o)]
            if chain:
                self._replaced[id(event)] = tuple(chain)
            self._open[key] = event
            self._index(key, event)
            return []
        resolved = [rerun] if rerun is not None else []
        if event.action.kind is not ToolKind.SHELL or not self._open:
            return resolved
        return resolved + self._resolve(event.action.command or "")

    def events(self) -> list[ToolEvent]:
        return list(self._open.values())

    def replaced(self, event: ToolEvent) -> tuple[ToolEvent, ...]:
        """The earlier failures of the same step that ``event`` replaced, oldest first."""
        return self._replaced.get(id(event), ())

    def _index(self, key: Key, event: ToolEvent) -> None:
        if event.action.kind is not ToolKind.SHELL:
            return  # only shell failures can be resolved by another call
        command = event.action.command or ""
        failed = " ".join(command.split())
        self._by_command.setdefault(failed, []).append((key, event))
        steps = segments(command)
        if steps and steps[-1] != failed:  # re-running the step that failed resolves it
            self._by_command.setdefault(steps[-1], []).append((key, event))
        last = steps[-1] if steps else failed
        family, targets = operation(last)
        if family:
            paths = tuple(t for t in targets if is_path(t))
            self._by_runner.setdefault(family, []).append((key, _Open(event, paths)))

    def _supersede(self, event: ToolEvent) -> list[ToolEvent]:
        """A step that fails again replaces its older failure: the newer error is the
        current state (an older one under other options or in another chain is gone).
        Returns the failures it replaced."""
        replaced: list[ToolEvent] = []
        if event.action.kind is not ToolKind.SHELL:
            return replaced
        steps = segments(event.action.command or "")
        for key, older in self._by_command.pop(steps[-1], ()) if steps else ():
            if self._open.get(key) is older:
                del self._open[key]
                replaced.append(older)
        return replaced

    def _close(self, key: Key, event: ToolEvent, resolved: list[ToolEvent]) -> None:
        if self._open.get(key) is event:  # stale index entries are skipped
            del self._open[key]
            resolved.append(event)

    def _resolve(self, command: str) -> list[ToolEvent]:
        resolved: list[ToolEvent] = []
        for step in segments(command):
            for key, event in self._by_command.pop(step, ()):
                self._close(key, event, resolved)
            self._cover(step, resolved)
        # The success keeps the original order of what it resolved.
        order = {id(e): e.position for e in resolved}
        return sorted(resolved, key=lambda e: order[id(e)])

    def _cover(self, step: str, resolved: list[ToolEvent]) -> None:
        family, targets = operation(step)
        entries = self._by_runner.get(family) if family else None
        if not entries:
            return
        paths = [t for t in targets if is_path(t)]
        kept: list[tuple[Key, _Open]] = []
        for key, entry in entries:
            if self._open.get(key) is not entry.event:
                continue
            if _covered(paths, entry.failed_paths):
                self._close(key, entry.event, resolved)
            else:
                kept.append((key, entry))
        self._by_runner[family] = kept


def _position(event: ToolEvent) -> int:
    return event.position


def operation(step: str) -> tuple[str, list[str]]:
    """The family of a command step (``test pytest``, ``run git push``) and the rest of
    its non-option arguments; ``""`` for a step no other step can stand in for (a bare
    program, or one whose first argument is a path: ``python a.py`` is not ``python
    b.py``)."""
    program, words = positional(step)
    if is_test_command(step):
        return f"test {program}", words
    if not words or is_path(words[0]) or not _SUBCOMMAND.fullmatch(words[0]):
        return "", words
    return f"run {program} {words[0]}", words[1:]


def counts_as_failure(event: ToolEvent) -> bool:
    """A failed call, except a read-only command answering "no" (``grep`` without a
    match, ``diff`` with differences, ``test`` false: exit 1 with nothing on it)."""
    if not event.failed:
        return False
    command = event.action.command if event.action.kind is ToolKind.SHELL else None
    if command and event.exit_code == 1 and is_read_only(command):
        return bool(error_lines(event.result or "", failed=False))
    return True


def _covered(paths: list[str], failed_paths: Iterable[str]) -> bool:
    """A run of ``paths`` (none: the whole suite) covers every failing path."""
    if not paths:
        return True
    failed = list(failed_paths)
    return bool(failed) and all(any(f.startswith(p) for p in paths) for f in failed)
