"""The pure steps of one compaction: plan, assembly, archive.

Every function here is pure over message lists; :class:`ContextCompressor` strings them
together and owns the state (guard, counts).
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass
from operator import attrgetter

from ..analysis.kinds import handoff_body, live_text
from ..analysis.record import Analyzer, MessageFacts
from ..core.config import CompressionConfig, summary_budget_tokens
from ..core.frozen import evolve
from ..core.messages import Message, call_arguments, is_in_place_instruction, tool_calls
from ..core.report import ArchivedItem
from ..core.tokens import estimate_tokens, message_tokens
from .boundaries import head_end, newest_real_user, system_end, tail_cut
from .handoff import render_handoff, system_note, unwrap
from .media import strip_historical_media
from .placement import extra_parts, place_handoff, with_system_note
from .prune import content_handle, make_handle
from .sanitize import sanitize_tool_pairs
from .truncate import tail_slack

MIN_FIT_BUDGET = 400
"""The smallest handoff budget a compaction that must fit the window may shrink to."""
HANDOFF_FRAME_TOKENS = 250
"""Room held back for the handoff's framing lines and the one-time system note."""
WORK_SPEC_SHARE = 0.06
"""Of the window, what the spec of the work in progress may add on top of the handoff's
budget (more of its whole output than its excerpt; design §6 "task spec")."""
WORK_SPEC_MAX_TOKENS = 3_000


@dataclass(frozen=True)
class CompactionPlan:
    """Where a compaction would cut; see :meth:`ContextCompressor.plan`."""

    head_end: int
    tail_start: int
    prune_indices: tuple[int, ...]
    restated_user: int | None
    compressible: bool
    summary_budget_tokens: int
    middle_tokens: int
    previous_summary: str | None
    tail_cut_tokens: int = 0
    """Tokens the tail's large tool results give up so the handoff keeps its budget (a
    compaction that must fit a small window; see :func:`fitting_plan`)."""
    notes_room: int | None = None
    """Tokens left in the window beyond the handoff budget, where a compaction that must
    fit measured it (``None``: not measured, the window has room). A summary model's notes
    come on top of the extracted state only as far as this allows."""
    spec_room: int = 0
    """Tokens the spec of the work in progress may add on top of the handoff budget (see
    :data:`WORK_SPEC_SHARE`); within the measured room where a compaction must fit."""


_HANDOFF = attrgetter("handoff")


def work_spec_room(context_length: int) -> int:
    """What the spec of the work in progress may add to a handoff in this window."""
    return min(WORK_SPEC_MAX_TOKENS, int(context_length * WORK_SPEC_SHARE))


def make_plan(
    messages: Sequence[Message],
    costs: Sequence[int],
    config: CompressionConfig,
    context_length: int,
    tail_budget: int,
    facts: Sequence[MessageFacts] | None = None,
    *,
    protect: int | None = None,
    min_tail: int | None = None,
) -> CompactionPlan:
    """Where a compaction of ``messages`` cuts (``costs``: per-message token estimates;
    ``facts``: the messages' records, made here when not given; ``protect`` and
    ``min_tail``: the config's ``protect_first_n`` and ``min_tail_messages`` when not
    given, a tighter plan's own otherwise, each at least what the config allows)."""
    facts = facts if facts is not None else Analyzer().analyze(messages)
    decayed = any(map(_HANDOFF, facts))
    protect = config.protect_first_n if protect is None else protect
    head = head_end(messages, protect, decayed)
    cut = tail_cut(
        messages,
        costs,
        head,
        tail_budget,
        soft_ceiling=config.tail_soft_ceiling,
        min_tail=config.min_tail_messages if min_tail is None else min_tail,
        facts=facts,
    )
    # Without a handoff in the transcript there is none to skip or resume from.
    start = _skip_handoffs_in_tail(facts, cut.start) if decayed else cut.start
    middle = sum(costs[head:start])
    prunable = tuple(
        i
        for i in range(head, start)
        if messages[i].get("role") == "tool"
        and len(str(messages[i].get("content") or "")) > config.prune_min_chars
    )
    budget = summary_budget_tokens(middle, context_length, config)
    previous = _newest_handoff_body(facts) if decayed else None
    return CompactionPlan(
        head, start, prunable, cut.restated_user, start > head, budget, middle, previous,
        spec_room=work_spec_room(context_length),
    )  # fmt: skip


def fitting_plan(
    messages: Sequence[Message],
    costs: Sequence[int],
    plan: CompactionPlan,
    config: CompressionConfig,
    context_length: int,
    room: int,
    facts: Sequence[MessageFacts] | None = None,
) -> CompactionPlan:
    """``plan``, or one keeping only the minimum tail when ``plan`` cannot fit ``room``.

    For a forced compaction of a request that would otherwise be rejected: what ``plan``
    keeps (head, tail, a restated request) plus its handoff budget is predicted, and when
    that reaches ``room`` (the usable window less tool schemas) the tail budget drops to
    nothing and the head to the first user message, so only the anchors and the minimum
    tail stay verbatim.
    """
    if plan.compressible and _kept(messages, costs, plan) + plan.summary_budget_tokens < room:
        return plan
    # The protected head shrinks to the system prompt and the first user message: the
    # turns after it (often a large first listing) are summarized like any other.
    first_user = next((i for i, m in enumerate(messages) if m.get("role") == "user"), None)
    keep_first = 0 if first_user is None else first_user + 1 - system_end(messages)
    protect = min(config.protect_first_n, max(0, keep_first))
    tight = make_plan(messages, costs, config, context_length, 0, facts, protect=protect)
    moved = tight.tail_start > plan.tail_start or tight.head_end < plan.head_end
    chosen = tight if tight.compressible and moved else plan
    if not _fits(messages, costs, chosen, room):
        # Still too large with the minimum tail (a turn of a few large tool exchanges):
        # the older exchanges of the turn are summarized too and only the newest message
        # (with its tool group) stays verbatim, before any of it is cut to fit.
        smallest = make_plan(
            messages, costs, config, context_length, 0, facts, protect=protect, min_tail=1
        )
        if smallest.compressible and smallest.tail_start > chosen.tail_start:
            chosen = smallest
    return _handoff_first(messages, costs, chosen, room, facts)


def _handoff_first(
    messages: Sequence[Message],
    costs: Sequence[int],
    plan: CompactionPlan,
    room: int,
    facts: Sequence[MessageFacts] | None,
) -> CompactionPlan:
    """On a small window the handoff's floor (design §6) may be what does not fit. The
    tail's large tool results (verbatim output the agent can read again, archived) give
    way first, down to their own floor; only then does the handoff get less, down to a
    minimum that still carries the essentials."""
    left = room - _kept(messages, costs, plan) - max(HANDOFF_FRAME_TOKENS, FRAME_TOKENS)
    if not plan.compressible or left >= plan.summary_budget_tokens:
        # The room beyond the budget: the work's spec first, then a summary model's notes.
        spare = max(0, left - plan.summary_budget_tokens)
        spec = min(plan.spec_room, spare)
        return evolve(plan, notes_room=spare - spec, spec_room=spec)
    facts = facts if facts is not None else Analyzer().analyze(messages)
    give = max(0, min(plan.summary_budget_tokens - left, tail_slack(facts, plan.tail_start)))
    budget = max(MIN_FIT_BUDGET, left + give)
    return evolve(
        plan, summary_budget_tokens=budget, tail_cut_tokens=give, notes_room=0, spec_room=0
    )


def frame_tokens() -> int:
    """What the handoff's framing and the one-time system note cost, measured: a tail cut
    planned on less would leave the request over the window and be cut again, its handle
    with it."""
    framed = message_tokens({"role": "assistant", "content": render_handoff("")})
    return framed + estimate_tokens(f"\n\n{system_note()}")


# Measured once at import (the templates are read then): a process's first compaction
# does not pay for reading them.
FRAME_TOKENS = frame_tokens()


def _fits(
    messages: Sequence[Message], costs: Sequence[int], plan: CompactionPlan, room: int
) -> bool:
    """Whether ``plan`` with its smallest handoff can be under ``room``."""
    least = HANDOFF_FRAME_TOKENS + MIN_FIT_BUDGET
    return plan.compressible and _kept(messages, costs, plan) + least < room


def _kept(messages: Sequence[Message], costs: Sequence[int], plan: CompactionPlan) -> int:
    """Tokens ``plan`` keeps verbatim: head, tail and a restated request."""
    kept = sum(costs[: plan.head_end]) + sum(costs[plan.tail_start :])
    kept += sum(costs[i] for i in in_place_indices(messages, plan))
    if plan.restated_user is not None:
        kept += estimate_tokens(live_text(messages[plan.restated_user]))
    return kept


def restatement(messages: Sequence[Message], plan: CompactionPlan) -> Message | None:
    """The user request to restate after the handoff, or ``None``.

    A send without text (only an image or a file) continues the newest written request
    before it: both are restated together, so the instruction is not summarized away.
    """
    if plan.restated_user is None:
        return None
    message = messages[plan.restated_user]
    if live_text(message):
        return message
    for index in range(plan.restated_user - 1, plan.head_end - 1, -1):
        earlier = messages[index]
        if earlier.get("role") == "user" and live_text(earlier):
            # The send's media parts only: a text part it has is blank or the header of
            # an earlier restatement, which must not be restated again.
            text = {"type": "text", "text": live_text(earlier)}
            return {"role": "user", "content": [text, *extra_parts(message)]}
    return message


def in_place_indices(messages: Sequence[Message], plan: CompactionPlan) -> list[int]:
    """The middle's in-place instructions (mid-conversation system messages): kept
    verbatim like the system prompt, never summarized."""
    middle = range(plan.head_end, plan.tail_start)
    return [i for i in middle if is_in_place_instruction(messages[i])]


def assemble(
    messages: list[Message],
    pruned: list[Message],
    plan: CompactionPlan,
    handoff_text: str,
) -> tuple[list[Message], int]:
    """Head + the middle's instructions + handoff + tail, pairing repaired, old media
    stripped; and the repair count. The instructions keep their order and stay between
    what came before them (the head) and after them (the tail)."""
    head = with_system_note(list(pruned[: plan.head_end]))
    head += [messages[i] for i in in_place_indices(messages, plan)]
    tail = [m for m in map(unwrap, pruned[plan.tail_start :]) if m is not None]
    # The restated request as pruning left it (a long one keeps its excerpt).
    assembled = place_handoff(head, handoff_text, tail, restatement(pruned, plan))
    repaired = sanitize_tool_pairs(assembled)
    return strip_historical_media(repaired.messages), repaired.repairs.total


def _skip_handoffs_in_tail(facts: Sequence[MessageFacts], start: int) -> int:
    """Move the tail start past a standalone handoff inside the tail, so the old handoff is
    folded into the new one instead of being kept beside it. The newest user message
    stays in the tail."""
    anchor = newest_real_user((), 0, facts)
    for index in range(len(facts) - 1, start - 1, -1):
        record = facts[index]
        standalone = record.handoff and unwrap(record.message) is None
        if standalone and index + 1 < len(facts) and (anchor is None or anchor > index):
            return index + 1
    return start


def _newest_handoff_body(facts: Sequence[MessageFacts]) -> str | None:
    """The body of the newest handoff in the transcript (for resume), if any."""
    for record in reversed(facts):
        if record.handoff:
            body = handoff_body(record.text)
            if body is not None:
                return body
    return None


def summarized_turns(
    messages: Sequence[Message],
    plan: CompactionPlan,
    facts: Sequence[MessageFacts] | None = None,
) -> list[Message]:
    """The summarized middle, original content, with earlier handoffs unwrapped."""
    turns = []
    for index in range(plan.head_end, plan.tail_start):
        message = messages[index]
        kept = unwrap(message) if facts is None or facts[index].handoff else message
        if kept is not None and not is_in_place_instruction(message):
            turns.append(kept)
    return turns


USER_MESSAGE = "user_message"
"""The archived kind of a long user message shortened to its excerpt."""
WHOLE_KINDS = frozenset({"tool_output", USER_MESSAGE})
"""Archived kinds that hold the whole original message under their own handle."""


def archive_turns(
    messages: Sequence[Message],
    plan: CompactionPlan,
    archived: Collection[ArchivedItem] = (),
    facts: Sequence[MessageFacts] | None = None,
) -> list[ArchivedItem]:
    """Every summarized message, retrievable by a handle derived from its content.

    ``archived``: what pruning archived already (a pruned tool output or a shortened user
    message keeps the whole original message under its own handle: not archived twice).
    """
    already = {item.index for item in archived if item.kind in WHOLE_KINDS}
    facts = facts if facts is not None else Analyzer().analyze(messages)
    return [
        ArchivedItem(archive_handle(facts[index]), "message", index, messages[index])
        for index in range(plan.head_end, plan.tail_start)
        if index not in already
    ]


def archive_handle(record: MessageFacts) -> str:
    """The handle a summarized message is archived under: a tool output's is the hash of
    its text (the handle its prune stub carries, so a handoff can name an output the same
    way whether it was pruned first or not), any other message's :func:`message_handle`."""
    if record.role == "tool" and isinstance(record.message.get("content"), str):
        return content_handle(record)
    return message_handle(record)


def message_handle(record: MessageFacts) -> str:
    """The archive handle of a whole message (role, text and call arguments), once."""

    def compute() -> str:
        message = record.message
        calls = (call_arguments(c) for c in tool_calls(message))
        return make_handle(str(message.get("role")), record.text, *calls)

    handle: str = record.remember("message_handle", compute)
    return handle
