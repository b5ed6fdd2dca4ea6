"""The pairing check of what a branch sends upstream, in proportion to what changed.

Every request the gateway sends goes through the library's pairing repair (design §1:
strict providers refuse an orphan result or a call without its result). An agent's next
request repeats its last one and adds a turn, so a branch remembers the last request
that needed no repair and checks only what follows the part a new request repeats: a
history of thousands of messages costs a walk over its new turns, not over all of them.

Why checking the rest alone is enough: a request needs no repair when none of its tool
groups (a message and the tool results right after it) is broken, no two adjacent turns
have the same role, and the newest calls have their results (a sent request has no call
in flight). Each of those is decided inside one group or one adjacent pair. The cut is
placed at a message that is not a tool result and that the remembered request also has
at that index (or where the remembered request ended), so the groups before it are the
same groups, complete and found clean before; what is left is the pair across the cut
and the rest, checked as a list of its own. Anything else takes the whole check, whose
repair is the library's.

Most requests need no repair, so the check itself only answers whether the list is
clean (:func:`needs_no_repair`: ``core.invariants.is_paired``'s walk that stops at the
first defect, and the turns' alternation), what ``sanitize_tool_pairs(..., sent=True)``
decides without its lists of readable defects; a list it does not find clean goes to
the library, which repairs it (or finds it clean after all: the answer is the same).
"""

from __future__ import annotations

from ..compaction.sanitize import sanitize_tool_pairs
from ..core.invariants import alternation_violations, is_paired
from ..core.messages import Message
from .history import common_prefix

__all__ = ["CleanRequests", "needs_no_repair"]

_TURNS = frozenset({"user", "assistant"})


class CleanRequests:
    """The newest request of a branch that needed no pairing repair."""

    def __init__(self) -> None:
        self.last: list[Message] = []

    def sanitized(self, request: list[Message]) -> list[Message]:
        """``sanitize_tool_pairs(request, sent=True).messages``: ``request`` itself when it
        needs no repair."""
        cut = _cut(request, self.last)
        if _clean_from(request, cut) if cut else needs_no_repair(request):
            self.last = request
            return request
        repaired = sanitize_tool_pairs(request, sent=True).messages
        self.last = request if repaired is request else []
        return repaired


def _cut(request: list[Message], last: list[Message]) -> int:
    """An index (> 0) before which ``request`` holds the same complete groups as ``last``,
    or 0 when there is none."""
    agreed = common_prefix(request, last)
    if not agreed:
        return 0
    cut = agreed if agreed == len(last) else agreed - 1  # last[cut] must be request[cut]
    cut = min(cut, len(request) - 1)
    while cut > 0 and request[cut].get("role") == "tool":
        cut -= 1
    return cut


def _clean_from(request: list[Message], cut: int) -> bool:
    """Whether the pair across ``cut`` and everything from it need no repair."""
    before, after = request[cut - 1].get("role"), request[cut].get("role")
    if before == after and before in _TURNS:
        return False
    return needs_no_repair(request[cut:])


def needs_no_repair(messages: list[Message]) -> bool:
    """Whether ``sanitize_tool_pairs(messages, sent=True).messages is messages``: every
    call answered exactly once (the newest calls too, on a sent request) and no two
    adjacent user or assistant turns, found without the library's readable defects."""
    return is_paired(messages, in_flight=False) and not alternation_violations(messages)
