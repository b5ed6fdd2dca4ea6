"""The pure steps of one ``compress`` call beyond planning: the prune-only tier, fitting
a must-fit result into the window, and the honest over-window warning.

Tier 1 (design §4 step 0) prunes old tool output everywhere outside the protected tail —
the protected head included, the system prompt and user-typed text never — and stops
there when that brings the request to ``prune_only_ratio`` × the trigger (for a must-fit
compaction: that share of the window). Tier 2 summarizes the middle of the pruned list.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from operator import itemgetter

from ..analysis.gist import is_stub
from ..analysis.record import Analyzer, MessageFacts
from ..compaction.boundaries import newest_real_user, newest_request, system_end
from ..compaction.plan import HANDOFF_FRAME_TOKENS, MIN_FIT_BUDGET, CompactionPlan, fitting_plan
from ..compaction.prune import PassResult, PruneSettings, prune
from ..compaction.truncate import Cut, last_rungs, shorten_tail_results
from ..compaction.usertexts import (
    UserBudget,
    excerpt_tokens,
    over_budget,
    shorten_users,
    user_budget,
    within_budgets,
)
from ..core.cache import prices_for, receipt
from ..core.config import CompressionConfig
from ..core.frozen import evolve
from ..core.invariants import align_back
from ..core.messages import Message
from ..core.report import CompressionReport, Outcome, Receipt
from ..core.tokens import estimate_tokens, retexted_tokens


@dataclass(frozen=True)
class Job:
    """One compaction's inputs: the messages and their records, the plan, the report so
    far, the tool-schema tokens, the room the messages may take, and how it was asked."""

    messages: list[Message]
    facts: Sequence[MessageFacts]
    plan: CompactionPlan
    base: CompressionReport
    extra: int
    room: int
    force: bool
    focus: str | None
    users: UserBudget
    long_users: tuple[int, ...] = ()
    """User messages over their budget (design §5, large user messages), oldest first:
    each keeps its excerpt wherever the output keeps it."""


TOKENS = itemgetter(MessageFacts._fields.index("tokens"))
"""A record's tokens (mapped over the records in C; a record is a tuple: by position)."""
# The report every job starts from, copied (a frozen __init__ sets twenty fields one by one).
_NOOP = CompressionReport(Outcome.NOOP)


def make_job(
    messages: list[Message],
    facts: Sequence[MessageFacts],
    plan: CompactionPlan,
    extra: int,
    room: int,
    config: CompressionConfig,
    context_length: int,
    *,
    force: bool,
    focus: str | None,
    costs: Sequence[int] | None = None,
) -> Job:
    """One compaction's job; a must-fit (forced) one takes the tight plan that fits
    (``costs``: the records' tokens, when the caller listed them already)."""
    costs = costs if costs is not None else list(map(TOKENS, facts))
    before = sum(costs) + extra
    base = evolve(_NOOP, before_tokens=before, after_tokens=before,
                  before_messages=len(messages), after_messages=len(messages))  # fmt: skip
    if force:
        plan = fitting_plan(messages, costs, plan, config, context_length, room, facts)
    users = user_budget(config, context_length)
    long_users = _long_users(messages, facts, users, extra, room, force)
    return Job(messages, facts, plan, base, extra, room, force, focus, users, long_users)


def _long_users(
    messages: list[Message],
    facts: Sequence[MessageFacts],
    users: UserBudget,
    extra: int,
    room: int,
    force: bool,
) -> tuple[int, ...]:
    """The user messages to shorten: those over the budgets, never the newest one (what
    the agent must answer) unless it alone would not fit a compaction that must fit."""
    if within_budgets(facts, users):
        return ()  # what is spared does not matter: no user message is over a budget
    newest = newest_real_user(messages, 0, facts)
    request = newest_request(messages, 0, newest, facts) if newest is not None else None
    spared = {newest, request} - {None}
    if force and newest is not None:
        system, _, size, handoff = floor_breakdown(messages, facts, extra)
        if system + size + handoff > room:
            spared = set()  # it alone would not fit: its instruction lines and a handle
    # Only user messages can be shortened: the others are not offered.
    indices = [i for i, f in enumerate(facts) if f.role == "user" and i not in spared]
    return tuple(over_budget(facts, users, indices, None))


def prune_end(job: Job, config: CompressionConfig) -> int:
    """Where the protected tail starts for pruning: the plan's tail, and never less than
    the minimum tail (a plan with nothing to summarize may put its tail at the end)."""
    floor = align_back(job.messages, max(0, len(job.messages) - config.min_tail_messages))
    return min(job.plan.tail_start, floor)


def prune_outside_tail(job: Job, config: CompressionConfig, analyzer: Analyzer) -> PassResult:
    """Tier 1's passes over every message outside the protected tail, head included, and
    the user messages over their budgets wherever they are."""
    settings = PruneSettings(
        system_end(job.messages), prune_end(job, config), config.prune_min_chars,
        config.args_truncate_over, config.args_head_chars, analyzer,
    )  # fmt: skip
    return _with_users(job, prune(job.messages, settings), job.long_users)


def _with_users(job: Job, pruned: PassResult, indices: Sequence[int]) -> PassResult:
    """``pruned`` with the user messages at ``indices`` shortened to their excerpts."""
    if not indices:
        return pruned
    users = shorten_users(pruned.messages, job.facts, indices, job.users.excerpt_chars)
    return PassResult(users.messages, pruned.changed, (*pruned.archived, *users.archived))


def prune_head(job: Job, config: CompressionConfig, analyzer: Analyzer) -> PassResult:
    """The prune passes over the protected head alone: what tier 2 keeps besides the
    handoff and the tail (the middle's outputs are summarized, not stubbed). Only large
    outputs there become stubs: a small one costs little and may hold what the session
    started from (the log or listing the task refers to)."""
    least = max(config.prune_min_chars, config.head_prune_min_chars)
    settings = PruneSettings(
        system_end(job.messages), job.plan.head_end, least,
        config.args_truncate_over, config.args_head_chars, analyzer,
    )  # fmt: skip
    plan = job.plan
    # Of the long user messages, those the output keeps: the head's, the tail's and the
    # restated one (the middle's are quoted in the handoff, within its own limits).
    kept = [
        i for i in job.long_users
        if i < plan.head_end or i >= plan.tail_start or i == plan.restated_user
    ]  # fmt: skip
    return _with_users(job, prune(job.messages, settings), kept)


def cut_tail(job: Job, pruned: PassResult) -> PassResult:
    """``pruned`` with the tail's large tool results shortened as the plan says, so the
    handoff of a must-fit compaction keeps its budget (:func:`fitting_plan`)."""
    start, excess = job.plan.tail_start, job.plan.tail_cut_tokens
    if excess <= 0:
        return pruned
    cut = shorten_tail_results(pruned.messages, job.facts, start, excess)
    return PassResult(cut.messages, pruned.changed + cut.changed, (*pruned.archived, *cut.archived))


STUB_TOKENS = 24
"""About the least a stub or duplicate marker costs (label, size, handle)."""
ARGS_TOKENS = 120
"""About the least a shortened call's arguments cost."""


def tier1_out_of_reach(job: Job, config: CompressionConfig, threshold: int) -> bool:
    """Whether no pruning can bring the request to tier 1's target: what pruning never
    shortens (every text, the tail) with each output at about its smallest stub and each
    long call at its shortest already exceeds it. It spares a compaction that must
    summarize stubbing the outputs its handoff replaces."""
    target = tier1_target(job, config, threshold)
    facts = job.facts
    start = system_end(job.messages)
    end = max(start, prune_end(job, config))
    # Every message adds a non-negative amount, so the floor is over the target as soon as
    # a part of the sum is: what pruning leaves whole (outside ``[start, end)``) is summed
    # first, in C, then the prunable range is walked until the floor passes the target.
    shortened, short = set(job.long_users), excerpt_tokens(job.users)
    floor = job.extra + sum(map(TOKENS, facts[:start])) + sum(map(TOKENS, facts[end:]))
    for index in shortened:
        if not start <= index < end:  # an excerpt in place of the whole
            floor -= facts[index].tokens - min(facts[index].tokens, short)
    if floor > target:
        return True
    # Each message of the range adds at most its tokens (a stub, an excerpt, shortened
    # arguments never more): the whole range fits, so does the floor (a small session).
    if floor + sum(map(TOKENS, facts[start:end])) <= target:
        return False
    for index in range(start, end):
        record = facts[index]
        role = record.role
        if index in shortened:
            floor += min(record.tokens, short)
        elif role == "tool":
            floor += min(record.tokens, STUB_TOKENS)
        elif role == "assistant" and record.message.get("tool_calls"):
            text = estimate_tokens(record.text)  # its arguments may be shortened
            floor += text + min(record.tokens - text, ARGS_TOKENS)
        else:
            floor += record.tokens
        if floor > target:
            return True
    return False


def can_prune(job: Job, config: CompressionConfig) -> bool:
    """Whether pruning outside the tail could still remove something (cheap check)."""
    if job.long_users:
        return True
    limit = config.prune_min_chars
    for index in range(system_end(job.messages), prune_end(job, config)):
        record = job.facts[index]
        if record.role == "tool" and len(record.text) > limit and not is_stub(record.text):
            return True
    return False


def tier1_target(job: Job, config: CompressionConfig, threshold: int) -> int:
    """The request size tier 1 must reach to stop there."""
    reference = job.room + job.extra if job.force else threshold
    return int(reference * config.prune_only_ratio)


def tokens_of(messages: Sequence[Message], analyzer: Analyzer) -> int:
    facts = analyzer.facts
    return sum(facts(m).tokens for m in messages)


def pruned_tokens(
    job: Job,
    messages: Sequence[Message],
    analyzer: Analyzer,
    replaced: list[tuple[Message, int]] | None = None,
) -> int:
    """:func:`tokens_of` a pruned copy of the job's messages (the same length, some
    replaced): a message the passes left as it was is the job's, and so is its record
    (only the replaced ones are looked up: most of a pruned list is the input's).
    ``replaced`` gets each replaced message with its tokens (see :func:`keep_replaced`)."""
    if len(messages) != len(job.messages):
        return tokens_of(messages, analyzer)
    total = 0
    for old, new, record in zip(job.messages, messages, job.facts, strict=True):
        if new is old:
            total += record.tokens
            continue
        tokens = _replaced_tokens(record, new, analyzer)
        total += tokens
        if replaced is not None:
            replaced.append((new, tokens))
    return total


def keep_replaced(analyzer: Analyzer, replaced: Sequence[tuple[Message, int]]) -> None:
    """Make the records of the replaced messages of a result that stands (the stubs) with
    the tokens :func:`pruned_tokens` worked out: the estimate after the compaction asks the
    records, and would count each stub again. Only for a result that stands: a prune tier
    that is not enough leaves no record of its stubs behind (they are never sent). A stub
    is its original (checked) with another text, so it is a message the check takes."""
    analyzer.seed(replaced, analyzer.image_tokens, analyzer.count)


def _replaced_tokens(record: MessageFacts, new: Message, analyzer: Analyzer) -> int:
    """The tokens of ``new``, a copy of ``record``'s message with another text (a stub):
    from the original's tokens where the estimator can tell them so; else ``new``'s own
    record, made here (the next compaction's, or the warning's, otherwise)."""
    tokens = retexted_tokens(record.tokens, record.message, new, analyzer.count)
    return tokens if tokens is not None else analyzer.facts(new).tokens


def fit_room(
    messages: list[Message],
    tokens: int,
    room: int,
    config: CompressionConfig,
    estimate: Callable[[list[Message]], int],
    analyzer: Analyzer | None = None,
) -> tuple[list[Message], int, tuple[Cut, ...]]:
    """A must-fit result over ``room``: the largest tool results (the tail's, typically),
    then long call arguments, are shortened until it fits; the handoff and the user's
    messages are left alone."""
    if tokens < room:
        return messages, tokens, ()
    return last_rungs(messages, tokens, room, config, estimate, analyzer)


def floor_breakdown(
    messages: Sequence[Message], facts: Sequence[MessageFacts], extra: int
) -> tuple[int, int, int, int]:
    """(system prompt, tool schemas, newest user request, minimum handoff) tokens."""
    system = sum(f.tokens for f in facts[: system_end(messages)])
    newest = next((f.tokens for f in reversed(facts) if f.real_user), 0)
    return system, extra, newest, MIN_FIT_BUDGET + HANDOFF_FRAME_TOKENS


def over_window_warning(
    messages: Sequence[Message],
    analyzer: Analyzer,
    extra: int,
    window: int,
    after: int,
    *,
    forced: bool,
) -> str | None:
    """The warning a result over the window carries, with the floor's breakdown (the
    messages' records are only read for a result over the window: most are not)."""
    if window <= 0 or after <= window:
        return None
    facts = analyzer.analyze(messages)
    system, tools, newest, handoff = floor_breakdown(messages, facts, extra)
    floor = system + tools + newest + handoff
    head = (
        f"the result is ~{after:,} tokens, over the window ({window:,}); the smallest it "
        f"can get is ~{floor:,} (system prompt {system:,} + tool schemas {tools:,} + newest "
        f"request {newest:,} + minimum handoff {handoff:,})"
    )
    if floor >= window:
        return (
            f"{head}, which alone does not fit: raise the window, shorten the system prompt "
            "or tool schemas, or send a shorter request"
        )
    advice = (
        "the agent loop's overflow recovery shortens it further"
        if forced
        else ("compress with force=True (or --force) to fit it")
    )
    return f"{head}: {advice}"


def fitted(
    job: Job,
    messages: list[Message],
    analyzer: Analyzer,
    config: CompressionConfig,
    tokens: int | None = None,
) -> tuple[list[Message], int, tuple[str, ...]]:
    """``messages``, their size, and notes of what was shortened: a must-fit result over
    the window has its largest tool results (then call arguments) shortened first.
    ``tokens``: the size of ``messages`` (tool schemas included), when already counted."""
    if tokens is None:
        tokens = job.extra + tokens_of(messages, analyzer)
    if not job.force or tokens < job.room + job.extra:
        return messages, tokens, ()

    def estimate(candidate: list[Message]) -> int:
        return job.extra + tokens_of(candidate, analyzer)

    out, after, cuts = fit_room(messages, tokens, job.room + job.extra, config, estimate, analyzer)
    notes = tuple(
        f"shortened {c.count} {c.what}{'s' if c.count != 1 else ''} to fit the window "
        f"(~{c.before:,} -> ~{c.after:,} tokens)"
        for c in cuts
    )
    return out, after, notes


def verbatim_cause(job: Job, summarized: bool) -> str:
    """Why a compaction saved nothing, in figures and indices only (never message text):
    what it must keep verbatim and the largest part of that. ``summarized``: a handoff was
    written and was not smaller than the turns it replaced."""
    messages, facts, plan = job.messages, job.facts, job.plan
    total = max(1, job.base.before_tokens)
    if summarized:
        what = (
            f"a handoff is no smaller than the {plan.tail_start - plan.head_end} messages "
            f"it would replace (~{plan.middle_tokens:,} tokens)"
        )
    else:
        what = (
            f"all {len(messages)} messages are kept verbatim (protected head and recent "
            "tail) and no old tool output is left to prune"
        )
    kept = [i for i in range(len(messages)) if i < plan.head_end or i >= plan.tail_start]
    if not kept:
        return what
    largest = max(kept, key=lambda i: facts[i].tokens)
    size = facts[largest].tokens
    share = f"~{size:,} tokens, {100 * size // total}% of the request"
    if facts[largest].role == "user" and largest == newest_real_user(messages, 0, facts):
        share += "; kept whole: the agent must answer it"
    return f"{what}; the largest is message {largest} ({_kind(job, largest)}, {share})"


def _kind(job: Job, index: int) -> str:
    """What a message is, for a warning."""
    record = job.facts[index]
    if record.role == "user" and index == newest_real_user(job.messages, 0, job.facts):
        return "the newest user message"
    return {
        "user": "a user message", "tool": "a tool result in the recent tail",
        "assistant": "an assistant message", "system": "the system prompt",
        "developer": "the system prompt",
    }.get(str(record.role), str(record.role))  # fmt: skip


def receipt_of(
    config: CompressionConfig,
    provider: str | None,
    report: CompressionReport,
    kept: int,
    *,
    background: bool = False,
    waited_ms: float | None = None,
) -> Receipt:
    """The receipt of a completed compaction that kept ``kept`` tokens of the request as
    the cached prefix, at the ``cache_prices`` row of ``provider``; its wait is the
    report's own time (or ``waited_ms``) until the manager states the agent's."""
    assert report.tier is not None
    row = prices_for(config.cache_prices, provider)
    waited = report.elapsed_ms if waited_ms is None else waited_ms
    made = receipt(report.tier, report.before_tokens, report.after_tokens, kept, waited, row)
    return evolve(made, background=True) if background else made
