"""Per-session state: branches, compacted prefixes, and what each client already sent.

Clients resend their whole history with every request. A *session* (the client's
``X-Windowkeeper-Session`` header, else a fingerprint of the system prompt and first user
message, scoped per client key and protocol) holds *branches*; each branch remembers the
client history it last saw (:class:`Seen`: units, their canonical messages) and a
:class:`Prefix`: "client messages ``[0, covered)`` are represented by the compacted list
``C``". A request is rewritten to ``C + client[covered:]`` when it agrees with the
branch's history over the covered part.

Two conversations that share a fingerprint diverge at some unit ``k``; the second one
*forks* a branch keyed by ``k`` and the digest of the units before it (the prefix it
shares), so the two never reset each other. A fork keeps the parent's compacted prefix
and state when the agreement covers it, else it starts fresh.

The per-request work is proportional to what changed: the new history is compared with
the branch's (object equality, in C), the agreeing canonical messages are reused as the
same objects (so the manager's per-object estimate cache hits), and only new units are
converted. What must hold: a session is only touched under its lock; substitution is
all-or-nothing and keyed by content; nothing here logs message text.
"""

from __future__ import annotations

import asyncio
import hashlib
from collections import OrderedDict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..core.messages import Message, ToolSchema
from ..core.report import CompressionResult
from ..engine.compressor import ContextCompressor
from ..engine.guard import GuardState
from ..engine.prepared import PreparedCompaction
from ..loop.background import SessionBackground, Workers
from ..loop.events import Event
from .archive import MemoryArchive
from .engines import new_manager
from .history import Seen, agreeing_prefix, digest_of, without_markers
from .pairs import CleanRequests
from .protocols import Parsed, Protocol
from .settings import GatewaySettings

SESSION_HEADER = "x-windowkeeper-session"
MAX_SESSION_ID = 200
MAX_BRANCHES = 4
MIN_HYGIENE_MESSAGES = 4
_SYSTEM_ROLES = frozenset({"system", "developer"})


def session_key(scope: str, protocol: str, texts: tuple[str, str], header: str | None) -> str:
    """The session key: the header's id, else a fingerprint of (system, first user) texts,
    scoped by the caller and the protocol."""
    if header and header.strip():
        return f"{scope}:{protocol}:{header.strip()[:MAX_SESSION_ID]}"
    hasher = hashlib.blake2b(digest_size=12)
    for text in texts:
        hasher.update(text.encode("utf-8", "replace"))
        hasher.update(b"\x1e")
    return f"{scope}:{protocol}:fp-{hasher.hexdigest()}"


def public_id(key: str) -> str:
    """The id a client sees (and may ask about): the key without its scope."""
    return key.split(":", 2)[2]


# --- compaction state -------------------------------------------------------------------

EventSink = Callable[[str, Event, ContextCompressor], None]


@dataclass
class Prefix:
    """Client messages ``[0, covered)`` are represented by ``messages`` (``wire``: their
    upstream form, computed on first use)."""

    covered: int = 0
    messages: tuple[Message, ...] = ()
    wire: tuple[Any, list[Any]] | None = None


@dataclass(frozen=True)
class Before:
    """A branch's state before its newest compaction (what an undo restores without a
    store) and when that compaction was installed."""

    prefix: Prefix
    guard: GuardState
    previous_summary: str | None
    at: float


@dataclass
class Prepared:
    """One request after substitution: the client's canonical list, what the session
    stood for before it (``start``), what the turn starts from (``working``)."""

    parsed: Parsed
    branch: Branch
    client: list[Message]
    start: list[Message]
    working: list[Message]
    substituted: bool
    version: int
    private: bool = False
    prefix_wire: tuple[Any, list[Any]] = (None, [])
    """The prefix in the upstream's form (when ``substituted``)."""
    client_units: int = 0
    """Client units the prefix stands for (the rest are sent as the client sent them)."""
    made: list[Message] = field(default_factory=list)
    """The client's messages as the conversion made them (:attr:`Seen.made_messages`)."""
    installed: list[Message] | None = None
    """The compaction this request already made the branch's prefix."""
    compactions: list[tuple[list[Message], CompressionResult]] = field(default_factory=list)
    """This request's compactions (input, result), for the archive."""
    archived: int = 0
    """How many of ``compactions`` are archived already (in memory, without a store)."""
    mark: tuple[GuardState, str | None] = (GuardState(), None)
    """The compressor's guard state and previous summary before the next compaction."""

    def collect(self) -> None:
        """Take the compactions the branch's compressor just recorded (call under the
        session's lock, after every manager step)."""
        recorded = self.branch.compressor.compacted
        self.compactions.extend(recorded)
        recorded.clear()


class Branch:
    """One conversation of a session. Touch it only under the session's lock."""

    def __init__(self, key: str, session: GatewaySession, window: int, model: str | None) -> None:
        self.key = key
        self.session = session
        self.window = window
        sink = session.sink
        self.manager, self.compressor = new_manager(
            session.settings,
            window,
            model,
            session.clock,
            lambda event, compressor: sink(public_id(key), event, compressor),
            SessionBackground(session.workers, on_prepared=session.prepared),
        )
        self.prefix = Prefix()
        self.seen: Seen | None = None
        self.tools: list[ToolSchema] | None = None
        self._tools_key: tuple[object, object] = (object(), None)
        self.version = 0
        self.compactions = 0
        self.has_archive = False
        self.archive: MemoryArchive | None = None  # recall without a durable store
        # Persistence bookkeeping (store-backed gateways only).
        self.store_id: str | None = None
        # A fork's adopted prefix shows handles archived in its parent's store session:
        # recall reads them there until the fork's first commit copies them into its own.
        self.archive_from: str | None = None
        self.stored = self.generation = self.committed = 0
        self.saved_guard: str | None = None
        self.saved_window: int | None = None
        self.size = 0
        """Bytes of the newest request body of the branch (what its history costs to hold)."""
        self.clean = CleanRequests()
        """The pairing check of what the branch sends, from where it last found it clean."""
        self.before: Before | None = None

    def use_model(self, model: str, window: int) -> None:
        """A model switch re-derives the thresholds (a limit learned from an overflow
        error is kept while the configured window stays the same)."""
        if window != self.window:
            self.window = window
            self.compressor.update_model(model=model, context_length=window)

    def adopt(self, parent: Branch) -> None:
        """Start as a copy of ``parent``'s compaction state (a fork within its prefix)."""
        self.prefix = parent.prefix
        self.compressor.guard = GuardState.from_json(parent.compressor.guard.to_json())
        self.compressor.previous_summary = parent.compressor.previous_summary
        if parent.compressor.context_length != self.compressor.context_length:
            self.compressor.update_model(context_length=parent.compressor.context_length)
        self.has_archive, self.archive = parent.has_archive, parent.archive
        self.archive_from = parent.store_id if parent.store_id is not None else parent.archive_from

    def prepare(self, parsed: Parsed, history: Seen, added: ToolSchema | None = None) -> Prepared:
        """Substitute the compacted prefix and apply the message-count hygiene trigger;
        the token triggers are the manager's (design §2). The caller checked that
        ``history`` agrees with this branch over ``prefix.covered`` messages. ``added``:
        a tool the gateway adds to the request (counted in every estimate)."""
        key = (parsed.tools, added)
        if key != self._tools_key:
            # Kept while equal: the manager caches the schema estimate per list object.
            self._tools_key = key
            tools = [*(parsed.tools or []), *([added] if added else [])]
            self.tools = tools or None
            self.compressor.tools = list(tools) if tools else None
        self.manager.tools = self.tools
        self.compressor.compacted.clear()
        self.seen, self.size = history, len(parsed.raw)
        client = history.messages
        covered = self.prefix.covered
        substituted = 0 < covered <= len(client)
        start = [*self.prefix.messages, *client[covered:]] if substituted else client
        working = start
        limit = self.compressor.config.hygiene_hard_message_limit
        if len(working) >= max(limit, MIN_HYGIENE_MESSAGES):
            working = self.manager.compress(working)  # design §2: too many messages
        parsed.messages, parsed.ends = client, history.ends
        prepared = Prepared(
            parsed, self, client, start, working, substituted, self.version, history.private
        )
        prepared.mark = (self.compressor.guard, self.compressor.previous_summary)
        prepared.made = history.made_messages
        if substituted:
            prepared.prefix_wire = self.wire_prefix(parsed.protocol, prepared.made)
            prepared.client_units = history.ends[covered - 1]
        return prepared

    def settle(self, prepared: Prepared, final: list[Message]) -> bool:
        """Make ``final`` (a working list of this request) the branch's prefix when it is a
        new compaction; it then stands for every client message of the request. Called as
        soon as a compaction is known (right after the preflight, so concurrent requests
        of the branch reuse it) and when the turn ends. False when nothing changed or
        another request of the branch installed a compaction meanwhile."""
        prepared.collect()
        if final is prepared.start or final is prepared.installed:
            return False
        if self.version != prepared.version:
            return False
        self.before = Before(self.prefix, *prepared.mark, self.session.clock())
        prepared.mark = (self.compressor.guard, self.compressor.previous_summary)
        self.prefix = Prefix(len(prepared.client), tuple(final))
        self.version += 1
        prepared.version, prepared.installed = self.version, final
        self.compactions += 1
        self.session.compactions += 1
        if any(result.archived for _, result in prepared.compactions):
            self.has_archive = True
        return True

    def account(self, final: list[Message], estimate: int) -> None:
        """The session's figures after a turn."""
        self.session.sent_messages = len(final)
        self.session.last_estimate = estimate

    def wire_prefix(
        self, protocol: Protocol, made: Sequence[Message] = ()
    ) -> tuple[Any, list[Any]]:
        """The compacted prefix as units, without cache markers: those it kept are the
        markers of the request it was made in, stale now (the client marks what it sends
        after the prefix; a provider also limits how many markers a request may carry).
        ``made``: as for :meth:`Protocol.wire`."""
        prefix = self.prefix
        if prefix.wire is None:
            system, units = protocol.wire(prefix.messages, made)
            prefix.wire = system, [without_markers(unit) for unit in units]
        return prefix.wire


class GatewaySession:
    """The branches of one session key. Touch it only while holding ``lock``."""

    def __init__(
        self,
        key: str,
        protocol: Protocol,
        settings: GatewaySettings,
        clock: Callable[[], float],
        sink: EventSink,
        prepared: Callable[[PreparedCompaction], None] | None = None,
        workers: Workers | None = None,
    ) -> None:
        self.key = key
        self.protocol = protocol
        self.settings = settings
        self.clock = clock
        self.sink = sink
        self.prepared = prepared
        """Hears of each compaction prepared in the background (on a worker thread)."""
        self.workers = workers
        """The gateway's pool for background compactions (the process's by default)."""
        self.lock = asyncio.Lock()
        self.branches: OrderedDict[str, Branch] = OrderedDict()
        self.requests = self.compactions = self.forks = self.passthrough = 0
        self.client_messages = self.sent_messages = self.last_estimate = 0
        self.last: Branch | None = None
        self.loaded = False
        self.default_window = 0

    def add(self, branch: Branch) -> Branch:
        self.branches[branch.key] = branch
        self.branches.move_to_end(branch.key)
        while len(self.branches) > MAX_BRANCHES:
            self.branches.popitem(last=False)
        return branch

    def size(self) -> int:
        """Bytes of the newest request body of each branch (see :mod:`.table`)."""
        return sum(branch.size for branch in self.branches.values())

    def best(self, parsed: Parsed) -> tuple[Branch | None, int]:
        """The branch whose history agrees longest with ``parsed`` (in units)."""
        found: Branch | None = None
        agreed = -1
        for branch in reversed(self.branches.values()):
            seen = branch.seen
            if seen is None or seen.system != parsed.system:
                length = 0
            else:
                length = agreeing_prefix(parsed.units, seen.units)
            if length > agreed:
                found, agreed = branch, length
        return found, max(agreed, 0)

    def root_key(self) -> str:
        return f"{self.key}/r"

    def fork_key(self, parsed: Parsed, at: int) -> str:
        """The key of a branch that diverges from the others at unit ``at``: the digest of
        its history up to and including its first unit of its own."""
        return f"{self.key}/{at}:{digest_of([parsed.system, *parsed.units[: at + 1]])}"

    def status(self) -> dict[str, Any]:
        """Counts, thresholds and compactions; never message text."""
        branch = self.last
        compressor = branch.compressor if branch else None
        manager = branch.manager if branch else None
        return {
            "session": public_id(self.key),
            "protocol": self.protocol.name,
            "requests": self.requests,
            "client_messages": self.client_messages,
            "branches": len(self.branches),
            "forks": self.forks,
            "passthrough_requests": self.passthrough,
            "covered_messages": branch.prefix.covered if branch else 0,
            "compacted_messages": len(branch.prefix.messages) if branch else 0,
            "sent_messages": self.sent_messages,
            "compactions": self.compactions,
            "context_length": compressor.context_length if compressor else None,
            "window_tokens": manager.window if manager else None,
            "threshold_tokens": manager.threshold if manager else None,
            "hygiene_threshold": self.settings.hygiene_threshold,
            "hard_message_limit": self.settings.hard_message_limit,
            "last_prompt_tokens": max(0, manager.last_prompt_tokens) if manager else 0,
            "last_estimate_tokens": self.last_estimate,
            "compression_count": compressor.compression_count if compressor else 0,
            "blocked_reason": compressor.get_status()["blocked_reason"] if compressor else None,
            "recall_available": bool(branch and branch.has_archive),
            "held_after_undo": bool(compressor and compressor.guard.undone),
            "store_session_id": branch.store_id if branch else None,
        }
