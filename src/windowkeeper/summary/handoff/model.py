"""The handoff state: everything a handoff says, as data.

Every field is filled mechanically (the extractive summarizer) except where an LLM
summarizer provides the judgment sections (work state, decisions, next step). The text
form (:mod:`.text`) reads back exactly what it wrote, so the state survives any number
of compactions; items that no longer fit are shortened, never silently dropped (see
:mod:`.fit`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum


@dataclass(frozen=True)
class Quote:
    """A user message quoted in the handoff: verbatim, or head and tail when long.

    ``handle`` recalls the whole original from the archive; ``shortened`` says the text
    is not the whole message.
    """

    text: str
    handle: str = ""
    shortened: bool = False


class SpecRole(Enum):
    """Why a spec is in the handoff: the task's (pinned), the one shown besides it and
    why it was chosen, or one referred to by its handle only."""

    TASK = "task"
    """The user named its item or document: it defines the task."""
    IN_PROGRESS = "in progress"
    """Of the work item in progress named last."""
    NEWEST = "newest"
    """Of the item named last (no item is in progress)."""
    NOT_CLOSED = "not closed"
    """Of the item named last that is not closed (a closed one was named after it)."""
    REFERRED = "referred"


@dataclass(frozen=True)
class Spec:
    """An output that defines the work (SPEC §6 v3 "task spec"): a tracker look-up, an
    issue, a spec or plan document. ``text`` is its excerpt (verbatim unless
    ``shortened``); ``handle`` recalls the whole output; ``item`` is the work item it
    shows (``""`` when it names none); ``role``: why it is in the handoff. ``whole``: the
    whole output, kept for the spec of the work in progress only when its excerpt is
    shortened (a render shows more of it where the window has room on top of the
    handoff's budget, see :func:`~.fit.with_work_spec`), ``whole_shortened`` when it is
    itself not the whole output (a prune stub's excerpt, an earlier handoff's text)."""

    source: str
    text: str
    handle: str = ""
    item: str = ""
    shortened: bool = False
    role: SpecRole = SpecRole.REFERRED
    whole: str = field(default="", repr=False, compare=False)
    whole_shortened: bool = field(default=False, compare=False)

    @property
    def task(self) -> bool:
        """The user named this spec's item or document: it defines the task."""
        return self.role is SpecRole.TASK


@dataclass(frozen=True)
class OpenError:
    """A failure no later result resolved: what failed, its exit code, its error lines.

    ``command`` is set for shell failures (a later successful run of it, or a test run
    covering it, resolves the error on the next merge).
    """

    what: str
    lines: tuple[str, ...]
    exit_code: int | None = None
    command: str | None = None


@dataclass(frozen=True)
class Command:
    """A shell command the agent ran and its exit code when the output reported one."""

    command: str
    exit_code: int | None = None


@dataclass(frozen=True)
class WorkItem:
    """A work item the agent acted on (a tracker id, an issue or pull request number):
    its title from the output that showed it, and the evidence of what happened to it,
    oldest first (``claimed``, ``edited a.ex ×2``, ``tests passed: …``, ``closed``,
    ``committed 1a2b3c4``, ``pushed``)."""

    id: str
    title: str = ""
    evidence: tuple[str, ...] = ()


@dataclass(frozen=True)
class WorkState:
    """Subtasks by state. ``done`` items carry their evidence; ``unverified`` are claims
    without evidence; ``earlier`` counts done work condensed out of the list.

    ``items`` are the work items (grouped evidence); ``latest`` the newest result of each
    test / lint / build target (newest last); ``fixed`` the errors a later result
    resolved, each with its fix (what defines the work is :attr:`HandoffState.specs`)."""

    done: tuple[str, ...] = ()
    unverified: tuple[str, ...] = ()
    in_progress: tuple[str, ...] = ()
    pending: tuple[str, ...] = ()
    earlier: tuple[tuple[str, int], ...] = ()
    items: tuple[WorkItem, ...] = ()
    latest: tuple[str, ...] = ()
    fixed: tuple[str, ...] = ()
    changes: tuple[str, ...] = ()
    """The newest edits with their gist (``path: old → new``), newest last."""


@dataclass(frozen=True)
class HandoffState:
    """The structured content of one handoff (oldest items first in every tuple)."""

    task: Quote | None = None
    task_in_head: bool = False
    """The original task is the first user message kept verbatim in the protected head."""
    request: Quote | None = None
    """The newest user request when it is not the task (it may still be open)."""
    request_restated: bool = False
    """The newest request is restated verbatim right after the handoff."""
    users: tuple[Quote, ...] = ()
    specs: tuple[Spec, ...] = ()
    """What defines the task and its work items: the task's first when known, the newest
    last; a spec listed without text is only referred to (by its handle)."""
    constraints: tuple[str, ...] = ()
    task_rules: tuple[str, ...] = ()
    """The rules of a task kept verbatim in the context (the head, or restated after the
    handoff), bans and obligations first: the handoff read alone needs them, the whole
    context has them, so they give way under a tight budget (pinned constraints do not)."""
    work: WorkState = field(default_factory=WorkState)
    errors: tuple[OpenError, ...] = ()
    decisions: tuple[str, ...] = ()
    root: str = ""
    files: tuple[tuple[str, str], ...] = ()
    """(path, status) with status ``created``, ``modified``, ``deleted`` or ``read``."""
    unlisted: tuple[tuple[str, int], ...] = ()
    """(status, count) of files an earlier handoff no longer listed for space."""
    values: tuple[str, ...] = ()
    commits: tuple[tuple[str, str], ...] = ()
    """(SHA, message) of the commits the agent made, oldest first."""
    next_step: str = ""
    last_action: str = ""
    """The newest call at compaction time and the agent's words that led to it."""
    commands: tuple[Command, ...] = ()
    read_only: tuple[tuple[str, int], ...] = ()
    """Read-only commands by program, counted instead of listed."""
    earlier_commands: int = 0
    """Commands that ran before the listed ones (counted, not listed)."""
    environment: tuple[tuple[str, str], ...] = ()
    """Working directory, git branch, background processes (label, value)."""
    covered: str = ""
    """The id of the newest tool call this state already counts (the turns kept verbatim
    after the handoff included): the next compaction counts only the calls after it."""
    task_opening: str = ""
    """An excerpt of the task when the task itself is kept verbatim in the head (so the
    handoff read alone still says what the work is); recomputed, never carried."""
    error_lines: tuple[str, ...] = ()
    notes: str = ""
    """An earlier summary in a form this state does not know (another summarizer's)."""
    written: tuple[tuple[str, str], ...] = ()
    """Sections a summarizer wrote in its own words (title, text): shown instead of the
    extracted ones."""
