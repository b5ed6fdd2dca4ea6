"""Which failures a later success resolved, tracked in one pass over the tool events.

A failure is resolved the way a person reading the session would judge it (SPEC §6 v3):

- the same call (same kind and target) ran again and succeeded;
- a later successful shell call re-ran the failing command as one of its steps;
- it ran the same operation: another command with the same program and subcommand
  (``git push`` after ``git push`` failed, ``git add`` of other paths after a ``git add``
  failed, ``mix credo`` clean on other files), arguments aside; for a test run, the same
  runner over either no paths (the whole suite) or paths containing every failing one;
- a commit included every file the failure named (``bash scripts/x.sh`` failed, then
  ``git add scripts/x.sh && git commit``; ``git commit -a`` or ``git add -A`` include all);
- a non-shell call named for an operation (a ``commit`` skill) that a later successful
  shell step performed (``git commit``);
- a non-shell call that failed (an edit whose old string was not found, a read of a
  missing file) once a later call of the same kind succeeded: the agent moved on (edited
  another file, read the right one);
- a run that failed for a missing module, package or program, once an install of it
  succeeded (``pip install pytz``; an install of everything declared fixes any);
- a one-off probe (inline code run by an interpreter, ``head f | python3 -c '…'``)
  that failed, once a later call changed something: the agent moved on.

:meth:`OpenFailures.how` tells which of these resolved a failure (the handoff names the
fix by it).

What must hold: the cost is linear in the events. Open failures are indexed by their
normalized command, their operation family, their paths (while a commit may include them)
and their operation word, so a success only looks at the failures it could resolve; never
at every open failure (which made long sessions quadratic: failures × successes).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from enum import Enum
from itertools import takewhile

from .commands import is_read_only
from .events import ToolEvent
from .facts import collapse, folded
from .installs import covers, installed, missing_names
from .outputs import error_lines, is_test_command
from .probes import changes_something, is_probe
from .shellwords import segments as segments  # the failure tracker's steps, also read from here
from .toolshapes import EDIT_KIND, OTHER_KIND, SHELL_KIND, WRITE_KIND, ToolKind

Key = tuple[ToolKind, str]
_SUBCOMMAND = re.compile(r"[A-Za-z][\w-]*")


def positional(command: str) -> tuple[str, list[str]]:
    """The program of a command and its non-option arguments."""
    words = command.split()
    return (words[0] if words else ""), [w for w in words[1:] if not w.startswith("-")]


def is_path(word: str) -> bool:
    return "/" in word or "." in word.rpartition("/")[2]


def event_key(event: ToolEvent) -> Key:
    """Calls with the same key are the same operation run again."""
    return event.action.kind, collapse(event.action.target, 200)


class Reason(Enum):
    """How a later success resolved a failure."""

    RERUN = "rerun"
    """The same call, or the failing step, ran again and succeeded."""
    SAME_OPERATION = "same operation"
    """Another run of the same program and subcommand (a test run covering it)."""
    COMMIT = "commit"
    """A commit included every file the failure named."""
    OPERATION = "operation"
    """A shell step performed the operation a failed tool was named for."""
    MOVED_ON = "moved on"
    """A later call of the same kind succeeded (another edit, another read)."""
    INSTALLED = "installed"
    """What the failure said was missing was installed."""


def kind_group(event: ToolEvent) -> str:
    """Calls whose later success shows the agent moved on past a failure of this one."""
    kind = event.action.kind
    if kind in (WRITE_KIND, EDIT_KIND):
        return "change"
    if kind is OTHER_KIND:
        return f"other:{event.action.name}"
    return kind.value


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
    # Shell failures that name paths (a commit including them resolves them), and other
    # calls by the operation they are named for (a ``commit`` skill: ``git commit``).
    _by_path: list[tuple[Key, _Open]] = field(default_factory=list)
    _by_word: dict[str, list[tuple[Key, ToolEvent]]] = field(default_factory=dict)
    # The failures each open failure replaced (the same step failing before it, oldest
    # first): what was tried is part of the plot even once the newest error is the state.
    _replaced: dict[int, tuple[ToolEvent, ...]] = field(default_factory=dict)
    # Non-shell failures by the kind a later success moves on with; failures by what
    # they said was missing; how each resolved failure was resolved.
    _by_kind: dict[str, list[tuple[Key, ToolEvent]]] = field(default_factory=dict)
    _by_missing: dict[str, list[tuple[Key, ToolEvent]]] = field(default_factory=dict)
    _how: dict[int, Reason] = field(default_factory=dict)
    _probes: list[tuple[Key, ToolEvent]] = field(default_factory=list)
    # The program of every family ``_by_runner`` was given (``pytest`` of "test pytest"):
    # a step running another program cannot resolve one, so its family is not derived.
    _runner_programs: set[str] = field(default_factory=set)

    def add(self, event: ToolEvent) -> list[ToolEvent]:
        """Record ``event``; return the open failures it resolved (oldest first)."""
        if event.result is None or turned_down(event):
            return []  # a call the user turned down neither failed nor succeeded
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
        if rerun is not None:
            self._how[id(rerun)] = Reason.RERUN
        if not self._open:
            return resolved
        if self._probes and changes_something(event):
            for probe_key, probe in self._probes:
                self._close(probe_key, probe, resolved, Reason.MOVED_ON)
            self._probes = []
        if event.action.kind is not SHELL_KIND:
            for moved_key, moved in self._by_kind.pop(kind_group(event), ()):
                self._close(moved_key, moved, resolved, Reason.MOVED_ON)
            return resolved
        return resolved + self._resolve(event.action.command or "")

    def events(self) -> list[ToolEvent]:
        return list(self._open.values())

    def how(self, event: ToolEvent) -> Reason | None:
        """How a failure this tracker saw resolved was resolved."""
        return self._how.get(id(event))

    def replaced(self, event: ToolEvent) -> tuple[ToolEvent, ...]:
        """The earlier failures of the same step that ``event`` replaced, oldest first."""
        return self._replaced.get(id(event), ())

    def _index(self, key: Key, event: ToolEvent) -> None:
        for name in missing_names(event.result or ""):
            self._by_missing.setdefault(name, []).append((key, event))
        if event.action.kind is OTHER_KIND:
            word = operation_word(event)
            if word:
                self._by_word.setdefault(word, []).append((key, event))
        if event.action.kind is not SHELL_KIND:
            # Other calls are resolved by running them again, or by a later success of
            # the same kind.
            self._by_kind.setdefault(kind_group(event), []).append((key, event))
            return
        command = event.action.command or ""
        if is_probe(command):
            self._probes.append((key, event))
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
            self._runner_programs.add(family.split(" ", 2)[1])
        named = tuple(w for step in steps for w in positional(step)[1] if is_path(w))
        if named:
            self._by_path.append((key, _Open(event, named)))

    def _supersede(self, event: ToolEvent) -> list[ToolEvent]:
        """A step that fails again replaces its older failure: the newer error is the
        current state (an older one under other options or in another chain is gone).
        Returns the failures it replaced."""
        replaced: list[ToolEvent] = []
        if event.action.kind is not SHELL_KIND:
            return replaced
        steps = segments(event.action.command or "")
        for key, older in self._by_command.pop(steps[-1], ()) if steps else ():
            if self._open.get(key) is older:
                del self._open[key]
                replaced.append(older)
        return replaced

    def _close(self, key: Key, event: ToolEvent, resolved: list[ToolEvent], how: Reason) -> None:
        if self._open.get(key) is event:  # stale index entries are skipped
            del self._open[key]
            resolved.append(event)
            self._how[id(event)] = how

    def _resolve(self, command: str) -> list[ToolEvent]:
        resolved: list[ToolEvent] = []
        steps = segments(command)
        for step in steps:
            for key, event in self._by_command.pop(step, ()):
                self._close(key, event, resolved, Reason.RERUN)
            family = self._cover(step, resolved)
            for key, event in self._by_word.pop(family.rpartition(" ")[2], ()) if family else ():
                self._close(key, event, resolved, Reason.OPERATION)
            names = installed(step) if self._by_missing else None
            if names is not None:
                self._install(names, resolved)
        committed = commit_paths(steps)
        if committed is not None:
            self._commit(committed, resolved)
        # The success keeps the original order of what it resolved.
        order = {id(e): e.position for e in resolved}
        return sorted(resolved, key=lambda e: order[id(e)])

    def _cover(self, step: str, resolved: list[ToolEvent]) -> str:
        """Close the failures of the operation ``step`` runs; return its family (``""``
        when no open failure could be of it: the caller only looks it up)."""
        if not self._by_word and step.split(None, 1)[0] not in self._runner_programs:
            return ""  # a family's program is its step's first word
        family, targets = operation(step)
        entries = self._by_runner.get(family) if family else None
        if not entries:
            return family
        # Another run of the same subcommand shows it works, whatever it ran over; a test
        # run only speaks for the tests it ran.
        paths = [t for t in targets if is_path(t)] if family.startswith("test ") else []
        self._by_runner[family] = self._sweep(
            entries, lambda failed: _covered(paths, failed), resolved, Reason.SAME_OPERATION
        )
        return family

    def _install(self, names: tuple[str, ...], resolved: list[ToolEvent]) -> None:
        """Close the failures whose missing module ``names`` installs."""
        for missing in [m for m in self._by_missing if covers(names, m)]:
            for key, event in self._by_missing.pop(missing):
                self._close(key, event, resolved, Reason.INSTALLED)

    def _commit(self, committed: tuple[str, ...], resolved: list[ToolEvent]) -> None:
        """Close the failures whose named paths a commit included (``()``: everything).
        Only failures still open are kept for the next commit."""
        self._by_path = self._sweep(
            self._by_path, lambda failed: _included(committed, failed), resolved, Reason.COMMIT
        )

    def _sweep(
        self,
        entries: list[tuple[Key, _Open]],
        fixed: Callable[[tuple[str, ...]], bool],
        resolved: list[ToolEvent],
        how: Reason,
    ) -> list[tuple[Key, _Open]]:
        """Close the open ``entries`` whose failing paths ``fixed`` accepts; return the
        ones still open (stale entries are dropped)."""
        kept: list[tuple[Key, _Open]] = []
        for key, entry in entries:
            if self._open.get(key) is not entry.event:
                continue
            if fixed(entry.failed_paths):
                self._close(key, entry.event, resolved, how)
            else:
                kept.append((key, entry))
        return kept


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


_WHOLE_TREE = frozenset({"-a", "--all", "-A", ".", ":/"})
_NOTHING = re.compile(r"^nothing (?:added )?to commit\b", re.MULTILINE)
# A call the user turned down (the first line of its result says so): their decision,
# not an error the agent has to fix, nor a success.
_REJECTED = re.compile(
    r"(?i)\buser (?:doesn't|does not) want to proceed|\b(?:rejected|denied|declined) by (?:the )?"
    r"user\b|\buser (?:rejected|denied|declined) (?:this |the )?(?:tool|call|request|command)"
)
_MESSAGE = frozenset({"-m", "--message", "-F", "--file", "-am"})


def commit_paths(steps: list[str]) -> tuple[str, ...] | None:
    """What a command line commits: ``None`` without a ``git commit`` step, ``()`` when
    the commit takes every change (``-a``, ``git add -A`` / ``.``), else the paths its
    ``git add`` and ``git commit`` steps name."""
    paths: list[str] = []
    whole = commits = False
    for step in steps:
        words = step.split()
        if words[:1] != ["git"] or len(words) < 2 or words[1] not in ("add", "commit"):
            continue
        commits = commits or words[1] == "commit"
        args = list(takewhile(lambda w: w not in _MESSAGE, words[2:]))  # not the message
        whole = whole or "-am" in words or any(w in _WHOLE_TREE for w in args)
        paths += [w for w in args if is_path(w) and w != "."]
    if not commits:
        return None
    return () if whole else tuple(paths)


def _included(committed: tuple[str, ...], failed: Iterable[str]) -> bool:
    """Every failing path is a committed one (or under a committed directory); paths may
    be absolute on one side and relative on the other."""
    if not committed:
        return True
    return all(
        any(f == c or f.endswith("/" + c) or f.startswith(c.rstrip("/") + "/") for c in committed)
        for f in failed
    )


def operation_word(event: ToolEvent) -> str:
    """The operation a non-shell call is named for: the last word of its first argument
    when that is one token (``skill=handgemacht:commit`` is named for ``commit``)."""
    first = next((v for v in event.args.values() if isinstance(v, str)), "")
    if not first or any(c.isspace() for c in first.strip()):
        return ""
    words = _SUBCOMMAND.findall(first)
    return words[-1].lower() if words else ""


# Every alternative of ``_REJECTED`` says one of these besides "user" (a result's first
# line that says "user" does not call the pattern unless it says one of them too).
_REFUSAL_WORDS = ("want", "rejected", "denied", "declined")


def turned_down(event: ToolEvent) -> bool:
    """Whether the user turned the call down (its result's first line says so)."""
    head = (event.result or "")[:400].lstrip()
    end = head.find("\n")
    first = head if end < 0 else head[:end]
    # The words case-insensitively (``ſ`` for ``s``, ``ı``/``İ`` for ``i`` too: folded).
    said = folded(first)
    return (
        "user" in said
        and any(word in said for word in _REFUSAL_WORDS)
        and _REJECTED.search(first) is not None
    )


def counts_as_failure(event: ToolEvent) -> bool:
    """A failed call, except a read-only command answering "no" (``grep`` without a
    match, ``diff`` with differences, ``test`` false: exit 1 with nothing on it) and a
    call the user turned down."""
    if not event.failed or turned_down(event):
        return False
    command = event.action.command if event.action.kind is SHELL_KIND else None
    if command and event.exit_code == 1 and is_read_only(command):
        return bool(error_lines(event.result or "", failed=False))
    # ``git commit`` with nothing to commit: the work is already committed.
    return not (command and "commit" in command and _NOTHING.search(event.result or ""))


def _covered(paths: list[str], failed_paths: Iterable[str]) -> bool:
    """A run of ``paths`` (none: the whole suite) covers every failing path."""
    if not paths:
        return True
    failed = list(failed_paths)
    return bool(failed) and all(any(f.startswith(p) for p in paths) for f in failed)
