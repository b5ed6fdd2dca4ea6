"""Choosing a request's branch: continue one, fork one, or load one from the store.

The branch whose history agrees longest with the request is continued when the request
extends it and its compacted prefix still applies. Otherwise the request forks at the
first unit where it differs (see :mod:`.sessions`). With a store, a branch held in memory
is checked against the store first (another gateway may have moved it), and stored
branches are consulted before a new one is created, so a gateway that never saw a
session continues it instead of re-seeding it. Runs under the session's lock.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .history import Seen, agreeing_prefix, convert
from .protocols import Parsed
from .protocols.base import request_bytes
from .recall import RECALL_SCHEMA, tool_for
from .sessions import Branch, GatewaySession, Prepared

if TYPE_CHECKING:
    from .core import GatewayCore


def select(gateway: GatewayCore, session: GatewaySession, parsed: Parsed, window: int) -> Prepared:
    """The prepared request: its branch chosen, its prefix substituted."""
    persistence = gateway.persistence
    protocol = session.protocol
    session.default_window = window
    if persistence is not None and not session.loaded:
        session.loaded = True
        persistence.discover(session, parsed, convert(protocol, parsed, None)[1])
    branch, agreed = session.best(parsed)
    if branch is not None and persistence is not None and persistence.refresh(session, branch):
        branch, agreed = session.best(parsed)
    if branch is not None and not _extends(branch, agreed) and persistence is not None:
        persistence.discover(session, parsed, convert(protocol, parsed, branch.seen)[1])
        branch, agreed = session.best(parsed)
    if branch is None:
        branch = session.add(Branch(session.root_key(), session, window, parsed.model))
        history = convert(protocol, parsed, None)[1]
    else:
        reuse, history = convert(protocol, parsed, branch.seen)
        if not _extends(branch, agreed) or not _covers(branch, history, reuse):
            branch = _fork(session, branch, parsed, agreed, history, reuse, window)
    session.last = branch
    session.client_messages = len(history.messages)
    session.branches.move_to_end(branch.key)
    branch.use_model(parsed.model, window)
    if persistence is not None:
        persistence.share(branch, len(history.messages))
    # Offered only where the gateway can answer it: a recall call must never reach a client
    # that has no such tool.
    offered = gateway.settings.recall_rounds > 0 and tool_for(branch, gateway.store) is not None
    return branch.prepare(parsed, history, RECALL_SCHEMA if offered else None)


def _extends(branch: Branch, agreed: int) -> bool:
    """The request agrees with everything the branch saw (it continues that history)."""
    return branch.seen is not None and agreed >= len(branch.seen.units)


def _covers(branch: Branch, history: Seen, reuse: int) -> bool:
    """The branch's prefix stands for the request's first messages."""
    covered = branch.prefix.covered
    if covered <= reuse:
        return True
    seen = branch.seen
    return (
        seen is not None
        and covered <= len(history.messages)
        and agreeing_prefix(history.messages[reuse:covered], seen.messages[reuse:covered])
        == covered - reuse
    )


def _fork(
    session: GatewaySession,
    parent: Branch,
    parsed: Parsed,
    agreed: int,
    history: Seen,
    reuse: int,
    window: int,
) -> Branch:
    """The branch of a request that diverges from ``parent`` at unit ``agreed``; it keeps
    the parent's compaction when the agreement covers the parent's prefix."""
    key = session.fork_key(parsed, agreed)
    existing = session.branches.get(key)
    if existing is not None and existing is not parent and existing.seen is not None:
        again, again_history = convert(session.protocol, parsed, existing.seen)
        if _covers(existing, again_history, again):
            return existing
    branch = Branch(key, session, window, parsed.model)
    if 0 < parent.prefix.covered <= reuse:
        branch.adopt(parent)
    session.forks += 1
    return session.add(branch)


def counted_body(session: GatewaySession, parsed: Parsed) -> bytes | None:
    """A ``count_tokens`` body with the branch's prefix substituted, when it applies."""
    branch, _ = session.best(parsed)
    if branch is None or not branch.prefix.covered:
        return None
    reuse, history = convert(session.protocol, parsed, branch.seen)
    covered = branch.prefix.covered
    if not _covers(branch, history, reuse) or covered > len(history.ends):
        return None
    system, units = branch.wire_prefix(session.protocol, history.made_messages)
    rest = parsed.units[history.ends[covered - 1] :]
    return request_bytes(session.protocol.body_with(parsed, system, [*units, *rest], []))


INLINE_UNITS = 256
"""Choosing a branch converts at most this many units on the event loop; more go to a
worker thread. Conversion costs ~2 µs a unit (the 38 real sessions), so this bounds the
stall at ~0.5 ms, less than parsing such a body on the loop costs (~2 µs a KiB); a hand-off
to a worker cost a fresh 98 KiB body more CPU than its conversion (docs/benchmarks.md,
"the fresh-body path")."""


def selects_off_loop(session: GatewaySession, parsed: Parsed) -> bool:
    """Whether choosing the branch converts more than :data:`INLINE_UNITS` units (a long
    history no branch has seen: run it off the loop)."""
    units = len(parsed.units)
    if units <= INLINE_UNITS:
        return False
    return not any(
        b.seen is not None and units - len(b.seen.units) <= INLINE_UNITS
        for b in session.branches.values()
    )
