"""Work items (SPEC §6 v3 "work items"): each id the agent acted on, with its title and
the evidence of how far it got (claimed → edited → tested → closed → committed → pushed).

An id is acted on when a tracker command claims, closes, comments on or merges it, or a
commit message names it; ids that only appear in output are not work items. Work done
while an item is claimed (edits, check runs, other commands) is its evidence; a commit
belongs to the items its message names, else to the claimed item, else to the items
closed since the last commit; a push to every item committed and not yet pushed.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field, replace

from ...analysis.checks import check_result, check_target, is_check_run
from ...analysis.commands import is_bookkeeping, is_read_only, short_command
from ...analysis.events import ToolEvent
from ...analysis.facts import caseless_search, collapse
from ...analysis.resolution import segments
from ...analysis.toolshapes import EDIT_KIND, SHELL_KIND, WRITE_KIND, change_verb
from .claims import title_sources, titled
from .model import WorkItem
from .quoting import inline_list, parse_list
from .trail import commit_made

ITEM_ID = re.compile(r"(?<![\w-])[A-Za-z]\w*-[\w.-]*\w|(?<![\w&#/])#\d{1,6}\b")
_NUMBER = re.compile(r"(?<![\w.-])\d{1,6}(?![\w.-])")
_CLAIM_WORDS = re.compile(r"\b(?:in[_-]progress|claim(?:ed)?|start(?:ed)?|assignee)\b", re.I)
_TRACKER = re.compile(r"(?:bd|beads|gh|glab|jira|linear|tea|acli)\s")
_CLOSE = re.compile(r"\b(?:close|done|resolve[ds]?)\b|--status[= ]?(?:closed|done)", re.I)
_closes = caseless_search(_CLOSE)  # lowered in ASCII text: the same answer, faster
_GH_NUMBERED = re.compile(r"(?:gh|glab)\s+(?:issue|pr|mr)\s+(\w+)\s+(?:[^|;&]*?\s)?#?(\d{1,6})\b")
_PUSHED = re.compile(r"^\s+(?:[0-9a-f]{7,}\.\.\.?[0-9a-f]{7,}|\* \[new branch\])\s+\S+", re.M)
_PR_URL = re.compile(r"https?://\S+/(?:pull|merge_requests)/(\d+)")
_PR_CREATE = re.compile(r"\b(?:pr|mr)\s+create\b")
_STATUSES = frozenset({"in-progress", "in_progress", "to-do", "won't-fix", "wont-fix"})
MAX_ITEMS, MAX_EVIDENCE = 12, 10
_COUNT = re.compile(r" ×(\d+)$")
_COMMIT_TYPE = re.compile(r"^\w+(?:\([^)]*\))?!?:\s*")
_FILE_VERBS = ("edited ", "wrote ")
_COUNTED = re.compile(r"(?:edited|wrote) \d+ files?")


def evidence_key(entry: str) -> str:
    """Entries with the same key are the same step done again (the newest kept); the
    files written, and those edited, are one entry each."""
    if entry.startswith(("tests ", "lint ", "build ", *_FILE_VERBS)):
        return entry.split(" ", 1)[0]  # an item's newest check of each kind
    return _COUNT.sub("", entry)


Entry = tuple[str, str | dict[str, int]]
"""An evidence entry as :class:`ItemTracker` keeps it: its key (:func:`evidence_key`)
and its text, or for a file verb's entry the times each file was changed, by path in the
order of their newest change (rendered once, when the items are asked)."""


def noted(entries: list[Entry], entry: str) -> list[Entry]:
    """``entries`` with ``entry`` added last (a file changed again counted in its verb's
    entry, a command run again counted, a newer check result in place of the older one).
    A file verb's counts are updated in place: the caller drops ``entries``."""
    key = evidence_key(entry)
    old = next((value for k, value in entries if k == key), None)
    value: str | dict[str, int] = entry
    if old is not None and entry.startswith(_FILE_VERBS):
        value = _counted(key, old, entry.split(" ", 1)[1])
    elif isinstance(old, str) and entry.startswith("ran "):
        match = _COUNT.search(old)
        value = f"{key} ×{int(match.group(1)) + 1 if match else 2}"
    kept = [e for e in entries if e[0] != key]
    kept.append((key, value))
    return kept[-MAX_EVIDENCE:]


def _counted(verb: str, old: str | dict[str, int], path: str) -> str | dict[str, int]:
    """A file verb's entry (``edited a.ex ×2, b.ex``) with ``path`` changed once more.

    The entry's text is a list that is read back (:func:`_file_counts`) at the next
    change; the counts stand for that text while reading it back gives the same counts:
    no path ends as a count does (`` ×3``) and no count is below one (read from a text
    such as ``a ×0``). Otherwise the entry stays text, and is read back as before."""
    if isinstance(old, str):
        counts = _file_counts(old)[1]
        clean = all(n > 0 and _COUNT.search(p) is None for p, n in counts.items())
    else:
        counts, clean = old, True
    counts[path] = counts.pop(path, 0) + 1
    if clean and _COUNT.search(path) is None:
        return counts
    return _file_entry(verb, counts)


def rendered(entries: list[Entry]) -> tuple[str, ...]:
    """The texts of the entries (:data:`Entry`)."""
    return tuple(v if isinstance(v, str) else _file_entry(k, v) for k, v in entries)


def merged_files_entry(entry: str, base_names: bool = False, counted: bool = False) -> str:
    """A file verb's entry with a path named twice (once absolute, once relative before
    both were made relative) counted once with both counts; with ``base_names``, each
    file by its base name (a finished item's files: the Files section has the paths);
    ``counted``: only how many files (an item finished before the newest one)."""
    if not entry.startswith(_FILE_VERBS) or _COUNTED.fullmatch(entry):
        return entry
    verb, counts = _file_counts(entry)
    if counted:
        return f"{verb} {len(counts)} file{'s' if len(counts) > 1 else ''}"
    if base_names:
        named: dict[str, int] = {}
        for path, times in counts.items():
            name = path.rsplit("/", 1)[-1]
            named[name] = named.get(name, 0) + times
        counts = named
    return _file_entry(verb, counts)


def _file_counts(entry: str) -> tuple[str, dict[str, int]]:
    verb, _, listed = entry.partition(" ")
    counts: dict[str, int] = {}
    for value, _ in parse_list(listed):
        match = _COUNT.search(value)
        path = _COUNT.sub("", value)
        counts[path] = counts.pop(path, 0) + (int(match.group(1)) if match else 1)
    return verb, counts


def _file_entry(verb: str, counts: dict[str, int]) -> str:
    return f"{verb} {inline_list([f'{p} ×{n}' if n > 1 else p for p, n in counts.items()])}"


@dataclass
class ItemTracker:
    """Call :meth:`add` with the index of each event in order; :meth:`items` are the
    result (the ``previous`` items updated, new ones titled from any output)."""

    events: Sequence[ToolEvent]
    previous: Sequence[WorkItem] = ()
    _items: dict[str, WorkItem] = field(default_factory=dict)
    active: str | None = None
    _closed: list[str] = field(default_factory=list)
    _unpushed: list[str] = field(default_factory=list)
    _untitled: set[str] = field(default_factory=set)
    _sources: list[ToolEvent] | None = None
    _evidence: dict[str, list[Entry]] = field(default_factory=dict)
    """The evidence of each item noted (see :data:`Entry`); ``_items`` holds the rest."""

    def __post_init__(self) -> None:
        self._items = {item.id: item for item in self.previous}
        open_items = [i.id for i in self.previous if _open(i)]
        self.active = open_items[-1] if open_items else None

    def items(self) -> tuple[WorkItem, ...]:
        found = tuple(self._items.values())[-MAX_ITEMS:]
        evidence = self._evidence
        return tuple(
            WorkItem(i.id, i.title, rendered(evidence[i.id])) if i.id in evidence else i
            for i in found
        )

    def note(self, item: str, entry: str) -> None:
        current = self._items.pop(item, None) or WorkItem(item)
        title = current.title
        if not title and item not in self._untitled:  # looked for once per compaction
            if self._sources is None:
                self._sources = title_sources(self.events)
            title = titled(item, self._sources)
            self._untitled.add(item)
        entries = self._evidence.get(item)
        if entries is None:  # an item of the previous handoff, or a new one
            entries = [(evidence_key(e), e) for e in current.evidence]
        # Kept as entries, rendered once by items(): an item's file entry grows with
        # every file it changes, and reading and writing it at each change cost the
        # square of them.
        self._evidence[item] = noted(entries, entry)
        self._items[item] = WorkItem(current.id, title)

    def add(self, index: int) -> bool:
        """Record the event at ``index``; whether it was attributed to a work item."""
        event = self.events[index]
        if event.result is None:
            return False
        action = event.action
        if action.kind in (WRITE_KIND, EDIT_KIND):
            if self.active is None or event.failed or not action.path:
                return False
            # A write over a file that existed changed it, as an edit does.
            verb = "wrote" if change_verb(action.kind, event.result) == "wrote" else "edited"
            self.note(self.active, f"{verb} {collapse(action.path, 120)}")
            return True
        command = action.command if action.kind is SHELL_KIND else None
        if not command or len(command) > 4_000:
            return False
        return self._shell(event, command)

    def _shell(self, event: ToolEvent, command: str) -> bool:
        if is_bookkeeping(command):
            return False if event.failed else self._tracker(command, event)
        result = event.result or ""
        commit = commit_made(event)
        attributed = False
        if commit:
            attributed = self._commit(*commit)
        if not event.failed and "push" in command and _PUSHED.search(result):
            attributed = self._push() or attributed
        if attributed:
            return True
        if not event.failed and _TRACKER.match(command):
            return self._tracker(command, event)
        if self.active is None:
            return False  # work done with no item claimed is no item's evidence
        kind = is_check_run(event)
        if (event.failed and kind is None) or is_read_only(command):
            return False
        entry = check_evidence(kind, event, command) if kind else None
        self.note(self.active, entry or f"ran `{short_command(command, 100)}`")
        return True

    def _tracker(self, command: str, event: ToolEvent) -> bool:
        """Claims, closes and other changes of items through a tracker command."""
        ids = tracker_ids(command, event.result or "")
        if not ids:
            return False
        head = command.split("--reason", 1)[0].split(" -m ", 1)[0]
        if _CLAIM_WORDS.search(head) and not _closes(head):
            for item in ids:
                self.note(item, "claimed")
            self.active = ids[-1]
            return True
        verb = _verb(head)
        if verb is None:
            return False
        for item in ids:
            self.note(item, verb)
            if verb == "closed":
                self._closed.append(item)
                self.active = None if self.active == item else self.active
        return True

    def _commit(self, sha: str, message: str) -> bool:
        """Note the commit on the items it belongs to; whether there were any."""
        named = [i for i in ITEM_ID.findall(message) if i in self._items or i.startswith("#")]
        owners = named or ([self.active] if self.active else list(self._closed))
        for item in dict.fromkeys(owners):
            self.note(item, f"committed {sha[:10]}")
            self._unpushed.append(item)
            if not self._items[item].title and item in named:
                self._titled_by(item, message)
        self._closed = []
        return bool(owners)

    def _titled_by(self, item: str, message: str) -> None:
        """A title from the message of a commit that names the item (when no output
        showed one): its words without the commit type and the id."""
        words = _COMMIT_TYPE.sub("", message)
        words = re.sub(rf"\s*[(\[]?{re.escape(item)}[)\]]?", "", words).strip(" :-")
        if words:
            current = self._items[item]
            self._items[item] = replace(current, title=collapse(words, 120))

    def _push(self) -> bool:
        """Mark the committed items pushed; whether there were any."""
        pushed = [i for i in dict.fromkeys(self._unpushed) if i in self._items]
        for item in pushed:
            self.note(item, "pushed")
        self._unpushed = []
        return bool(pushed)


def _open(item: WorkItem) -> bool:
    return item_status(item).startswith("in progress")


def check_evidence(kind: str, event: ToolEvent, command: str) -> str:
    """``tests passed: `mix test` (3 tests, 0 failures)`` for a check run."""
    result = check_result(event)
    verdict, _, detail = result.partition(" (")
    return f"{kind} {verdict}: `{check_target(command)}`" + (f" ({detail}" if detail else "")


def _verb(command: str) -> str | None:
    words = command.split()
    if any(w in ("close", "done") for w in words) or _closes(command):
        return "closed"
    if "merge" in words:
        return "merged"
    if "comment" in words:
        return "commented"
    if "reopen" in words:
        return "reopened"
    if "create" in words:
        return "opened"
    return None


def tracker_ids(command: str, result: str) -> list[str]:
    """The items a tracker command names: its ids, ``gh issue close 12`` as ``#12``, a
    pull request it created by the URL it printed."""
    ids: list[str] = []
    for step in segments(command[:1_000]):
        if not _TRACKER.match(step + " "):
            continue
        numbered = _GH_NUMBERED.search(step)
        if numbered:
            ids.append(f"#{numbered.group(2)}")
        words = step.split(" --", 1)[0].split(" -m ", 1)[0]
        ids.extend(i for i in ITEM_ID.findall(words) if i.lower() not in _STATUSES)
        if _PR_CREATE.search(step):
            ids.extend(f"#{n}" for n in _PR_URL.findall(result[-2_000:]))
    return list(dict.fromkeys(ids))


def is_closed(item: WorkItem) -> bool:
    """Whether the item's evidence says it is finished (closed, committed, merged or
    pushed), not in progress."""
    return not item_status(item).startswith("in progress")


def item_status(item: WorkItem) -> str:
    """How far an item got, from its evidence: the furthest step, and for work in
    progress whether it was tested after its last change."""
    steps = [evidence_key(e).split(" ", 1)[0] for e in item.evidence]
    for step in ("pushed", "merged", "committed", "closed"):
        if step in steps:
            done = "done: " if step != "merged" else ""
            return f"{done}{step}"
    changed = max((i for i, s in enumerate(steps) if s in ("edited", "wrote")), default=-1)
    checked = [i for i, s in enumerate(steps) if s in ("tests", "lint", "build")]
    if changed >= 0 and (not checked or checked[-1] < changed):
        return "in progress: changed, not tested since"
    failing = [e for e in item.evidence if e.startswith(("tests failed", "lint failed",
                                                          "build failed"))]  # fmt: skip
    if failing:
        return "in progress: checks failing"
    if checked:
        return "in progress: tested, not closed"
    return "in progress: claimed" if "claimed" in steps else "in progress"
