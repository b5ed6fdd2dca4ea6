"""The artifact trail of the summarized turns: files, critical values, commands and error
lines (design §5 sections 7-8 and the state ledger of §9), merged with the previous one.

Files are listed once each with what happened to them, including edits made through the
shell (:mod:`~windowkeeper.analysis.commands`) and what ``git status`` / ``git diff``
reported. The costly scans (identifiers, error lines) walk the events from the newest
back and stop once their list is full: a compaction costs the same however long the
session behind it is.
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Iterable, Iterator, Sequence

from ...analysis.commands import (
    command_reads,
    command_touches,
    is_read_only,
    program_of,
    short_command,
    written_patches,
)
from ...analysis.events import ToolEvent, remembered
from ...analysis.facts import collapse, dedupe
from ...analysis.identifiers import event_identifiers, text_identifiers
from ...analysis.outputs import error_lines, event_errors, exact_values
from ...analysis.patches import applied_patches, written_by_tool
from ...analysis.record import memo_key
from ...analysis.reported import patched_files, reported_touches
from ...analysis.shellfacts import branch_hint, cwd_hint, is_background
from ...analysis.shellwords import command_cwd, joined
from ...analysis.toolshapes import (
    EDIT_KIND,
    OTHER_KIND,
    READ_KIND,
    SEARCH_KIND,
    SHELL_KIND,
    WRITE_KIND,
    overwrote,
)
from .model import Command

COMMAND_CHARS = 160
MAX_FILES = 300
MAX_VALUES = 60
MAX_COMMANDS = 40
MAX_ERROR_LINES = 30
_RANK = {"read": 0, "modified": 1, "created": 2, "deleted": 3}
_ORDER = ("created", "modified", "deleted", "read")


def working_directories(events: Sequence[ToolEvent], start: str | None) -> list[str | None]:
    """The working directory before each event (prompts in output, ``cd``, arguments),
    and after the last one."""
    cwd = start
    found = []
    for event in events:
        found.append(cwd)
        if event.action.kind is SHELL_KIND:
            cwd = cwd_hint(event, cwd) or cwd
    found.append(cwd)
    return found


def environment_of(
    events: Sequence[ToolEvent], cwd: str | None, previous: Sequence[tuple[str, str]]
) -> tuple[tuple[str, str], ...]:
    """Working directory, git branch and background processes, the newest known."""
    found = dict(previous)
    if cwd:
        found["Working directory"] = cwd
    shell = [e for e in events if e.action.kind is SHELL_KIND and e.action.command]
    branch = next((b for e in reversed(shell) if (b := branch_hint(e))), None)
    if branch:
        found["Git branch"] = branch
    started = [f"`{short_command(e.action.command or '', 100)}`" for e in shell if is_background(e)]
    if started:
        carried = found.get("Running in the background", "")
        running = [*(p for p in carried.split(", ") if p), *started]
        found["Running in the background"] = ", ".join(dedupe(running, keep_last=True)[-3:])
    order = ("Working directory", "Git branch", "Running in the background")
    return tuple((label, found[label]) for label in order if found.get(label))


def event_files(event: ToolEvent, cwd: str | None) -> tuple[tuple[str, str], ...]:
    """(path, status) of the files one call touched, computed once per event."""
    key = memo_key("files", cwd)
    found: tuple[tuple[str, str], ...] = remembered(event, key, lambda e: _event_files(e, cwd))
    return found


def _event_files(event: ToolEvent, cwd: str | None) -> tuple[tuple[str, str], ...]:
    action = event.action
    if event.failed and action.kind in (WRITE_KIND, EDIT_KIND):
        return ((action.path, "read"),) if action.path else ()
    if action.kind is READ_KIND and action.path:
        return ((action.path, "read"),)
    if action.kind is WRITE_KIND and action.path:
        return ((action.path, "modified" if overwrote(event.result) else "created"),)
    if action.kind is EDIT_KIND and action.path:
        return ((action.path, "modified"),)
    if action.kind is SEARCH_KIND and action.path and _is_file(action.path):
        return ((action.path, "read"),)
    if action.kind is not SHELL_KIND or not action.command:
        return ()
    found = list(command_touches(action.command, cwd))
    if not event.result:
        return tuple(found)
    if not event.failed:
        found.extend(command_reads(action.command, cwd))
        found.extend(_rooted(reported_touches(action.command, event.result), cwd))
    # patch exits non-zero when a hunk failed; the hunks that applied changed the file.
    patched = patched_files(action.command, event.result)
    if patched:
        found.extend(_rooted(patched, command_cwd(action.command, cwd)))
    return tuple(found)


def _rooted(touches: Iterable[tuple[str, str]], root: str | None) -> Iterator[tuple[str, str]]:
    for path, how in touches:
        yield (posixpath.join(root, path) if root and not path.startswith("/") else path), how


def session_touches(
    events: Sequence[ToolEvent], cwds: Sequence[str | None]
) -> list[tuple[str, str]]:
    """(path, status) of every file the events touched, in order. Editors that work on
    "the open file" (SWE-agent's ``open``/``edit``, an ``edit`` call without a path)
    change the file opened last."""
    found: list[tuple[str, str]] = []
    current: str | None = None
    patches: dict[str, tuple[str, ...]] = {}
    for event, cwd in zip(events, cwds, strict=False):
        touches = event_files(event, cwd)
        found.extend(touches)
        if not event.failed:
            found.extend(_patched(event, cwd, patches))
        action = event.action
        if action.kind in (READ_KIND, WRITE_KIND) and action.path:
            current = action.path
            continue
        command = (action.command or "").lstrip() if action.kind is SHELL_KIND else ""
        verb, _, rest = command.partition(" ")
        if verb in ("open", "create") and rest.split():
            current = rest.split()[0].strip("'\"")
            if verb == "create" and not event.failed:
                found.append((current, "created"))
        elif (
            current
            and not event.failed
            and not touches
            and ((action.kind is EDIT_KIND and not action.path) or verb == "edit")
        ):
            found.append((current, "modified"))
    return found


def _patched(
    event: ToolEvent, cwd: str | None, patches: dict[str, tuple[str, ...]]
) -> list[tuple[str, str]]:
    """Remember the patch files ``event`` writes (into ``patches``); the files changed by
    those it applies (analysis/patches.py)."""
    action = event.action
    if action.kind is WRITE_KIND and action.path:
        targets = written_by_tool(event.args)
        if targets:
            patches[posixpath.normpath(joined(action.path, cwd))] = targets
        return []
    if action.kind is not SHELL_KIND or not action.command:
        return []
    patches.update(written_patches(action.command, cwd))
    if not patches:
        return []
    files, here = applied_patches(action.command, cwd)
    return list(_rooted(((t, "modified") for f in files for t in patches.get(f, ())), here))


def _is_file(path: str) -> bool:
    name = path.rstrip("/").rsplit("/", 1)[-1]
    return "." in name and "*" not in path


def merged_files(
    previous: Iterable[tuple[str, str]], touches: Iterable[tuple[str, str]]
) -> tuple[tuple[str, str], ...]:
    """Each file once, in order of first mention, with its strongest status (a change
    beats a read; a file changed after it was deleted exists again)."""
    files: dict[str, str] = {}
    for path, status in (*previous, *touches):
        old = files.get(path)
        if old is None:
            files[path] = status
        elif old == "deleted" and status in ("created", "modified"):
            files[path] = "created"
        elif old == "read" and status == "created":
            files[path] = "modified"  # it existed: the session read it before writing it
        elif _RANK[status] > _RANK[old] and not (old == "created" and status == "modified"):
            files[path] = status
    kept = list(files.items())
    changed = [f for f in kept if f[1] != "read"]
    read = [f for f in kept if f[1] == "read"]
    if len(kept) > MAX_FILES:  # reads go first: a change is what the next window needs
        read = read[len(read) - max(0, MAX_FILES - len(changed)) :]
    keep = set(changed[-MAX_FILES:]) | set(read)
    # Grouped by status as the text shows them, so a handoff reads back as it was written.
    return tuple(f for status in _ORDER for f in kept if f[1] == status and f in keep)


def anchored(
    files: tuple[tuple[str, str], ...],
) -> tuple[tuple[tuple[str, str], ...], str | None]:
    """``files`` with the relative paths a tool printed (``git status`` lists paths
    relative to where it ran) or a command named before the working directory was
    seen, joined to the directory that turns them into paths the session also used
    absolute. Returns the files and that directory (``None`` when not found; the newest
    working directory is no evidence: the paths may predate it)."""
    relative = [p for p, _ in files if not p.startswith("/") and not p.startswith("~")]
    if not relative:
        return files, None
    bases: dict[str, str] = {}  # "/"-suffix of an absolute path -> the directory before it
    for path, _ in files:
        at = path.find("/", 1) if path.startswith("/") else -1
        while at > 0:
            bases.setdefault(path[at + 1 :], path[: at + 1])
            at = path.find("/", at + 1)
    votes: dict[str, int] = {}
    for path in relative:
        base = bases.get(posixpath.normpath(path))
        if base:
            votes[base] = votes.get(base, 0) + 1
    if not votes:
        return files, None
    base, count = max(votes.items(), key=lambda kv: (kv[1], len(kv[0])))
    if count * 2 < min(len(relative), 4):  # too few agree: leave the paths as printed
        return files, None
    joined = [
        (path if path.startswith(("/", "~")) else posixpath.normpath(base + path), how)
        for path, how in files
    ]
    return merged_files((), joined), base


# A repository's source and test directories: the root is their parent.
SOURCE_DIRS = frozenset({"src", "lib", "test", "tests", "app", "pkg", "cmd", "internal"})


def repository_root(files: Sequence[tuple[str, str]], cwd: str | None) -> str:
    """The directory most touched files live under (changed files count double): the
    working directory when it holds most of them, else the deepest directory holding at
    least 60% (the parent of a source or test directory such as ``src/``); ``""`` when
    none does."""
    weights = [(p, 2 if s != "read" else 1) for p, s in files if p.startswith("/")]
    total = sum(w for _, w in weights)
    if not total:
        return ""
    counts: dict[str, int] = {}
    for path, weight in weights:
        end = path.rfind("/")
        while end > 0:
            directory = path[: end + 1]
            counts[directory] = counts.get(directory, 0) + weight
            end = path.rfind("/", 0, end)
    here = (cwd.rstrip("/") + "/") if cwd and cwd.startswith("/") else ""
    if here and counts.get(here, 0) * 2 >= total:
        return here
    fitting = [d for d, n in counts.items() if n * 10 >= total * 6 and d.count("/") > 1]
    root = max(fitting, key=lambda d: (d.count("/"), d), default="")
    while root.count("/") > 2 and root.rstrip("/").rsplit("/", 1)[-1] in SOURCE_DIRS:
        root = root[: root.rstrip("/").rfind("/") + 1]
    return root


# --- values, commands, error lines ---------------------------------------------------------


def newest_distinct(items: Iterable[str], limit: int) -> list[str]:
    """The first ``limit`` distinct items of a newest-first stream, oldest first."""
    seen: dict[str, None] = {}
    for value in items:
        if value not in seen:
            seen[value] = None
            if len(seen) >= limit:
                break
    return list(reversed(seen))


def values_of(
    events: Sequence[ToolEvent], user_texts: Sequence[str], assistant_texts: Sequence[str]
) -> list[str]:
    """Identifiers and exact values, the newest ones (user-stated values first)."""

    def newest_first() -> Iterator[str]:
        for text in reversed(user_texts):
            yield from reversed([v.partition(": ")[2] or v for v in exact_values(text)])
            yield from reversed(text_identifiers(text, uuids=True))
        for event in reversed(events):
            yield from reversed(event_identifiers(event))
        for text in reversed(assistant_texts):
            yield from reversed(text_identifiers(text))

    return newest_distinct(newest_first(), MAX_VALUES)


def merged_values(previous: Sequence[str], new: Sequence[str]) -> tuple[str, ...]:
    merged = dedupe([*previous, *new], keep_last=True)
    return tuple(merged[-MAX_VALUES:])


def commands_of(events: Sequence[ToolEvent]) -> tuple[list[Command], dict[str, int]]:
    """Commands that did something (newest kept) and read-only ones counted by program."""
    counts: dict[str, int] = {}
    listed: list[Command] = []
    for event in events:
        command = event.action.command if event.action.kind is SHELL_KIND else None
        if not command:
            continue
        if is_read_only(command):
            program = program_of(command) or "other"
            counts[program] = counts.get(program, 0) + 1
        else:
            listed.append(Command(short_command(command, COMMAND_CHARS), event.exit_code))
    return listed, counts


def merged_commands(previous: Sequence[Command], new: Sequence[Command]) -> tuple[Command, ...]:
    """Each command once at its newest run; the newest :data:`MAX_COMMANDS` kept."""
    newest: dict[str, Command] = {}
    for record in (*previous, *new):
        newest.pop(record.command, None)
        newest[record.command] = record
    return tuple(list(newest.values())[-MAX_COMMANDS:])


def merged_counts(
    previous: Iterable[tuple[str, int]], new: dict[str, int]
) -> tuple[tuple[str, int], ...]:
    counts = dict(previous)
    for program, count in new.items():
        counts[program] = counts.get(program, 0) + count
    return tuple(sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])))


def error_lines_of(events: Sequence[ToolEvent], user_texts: Sequence[str]) -> list[str]:
    """Exact error lines the agent hit or the user pasted, the newest distinct ones."""

    def newest_first() -> Iterator[str]:
        for event in reversed(events):
            shell_like = event.action.kind in (SHELL_KIND, OTHER_KIND)
            if event.result and (event.failed or shell_like):
                yield from reversed(event_errors(event))
        for text in reversed(user_texts):
            yield from reversed(error_lines(text))

    return newest_distinct(newest_first(), MAX_ERROR_LINES)


def merged_error_lines(previous: Sequence[str], new: Sequence[str]) -> tuple[str, ...]:
    return tuple(dedupe([*previous, *new], keep_last=True)[-MAX_ERROR_LINES:])


_COMMIT = re.compile(r"^\[[^\]\s]+ ([0-9a-f]{7,40})\] (.+)$", re.M)


def commit_made(event: ToolEvent) -> tuple[str, str] | None:
    """(SHA, message) of the commit a successful command made (git prints
    ``[branch 1a2b3c4] message``), else ``None``."""
    command = event.action.command if event.action.kind is SHELL_KIND else None
    if not command or "commit" not in command or not event.result or event.failed:
        return None
    match = _COMMIT.search(event.result[:3_000])
    return (match.group(1), match.group(2)) if match else None


def commits_of(events: Sequence[ToolEvent]) -> list[tuple[str, str]]:
    """(SHA, message) of each commit a successful command made, in order."""
    made = [commit for event in events if (commit := commit_made(event))]
    return [(sha, collapse(message, 120)) for sha, message in made]
