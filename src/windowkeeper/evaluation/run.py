"""``evaluate``: replay a transcript with the manager's triggers active and measure it.

The replay is the one of :func:`windowkeeper.loop.replay.replay` (each assistant message
is one request carrying everything before it; the estimate of what was sent is fed back
as the real ``prompt_tokens``), so the token figures are the replay's. Around it:

* the compressor is observed (a subclass that records each completed compaction's
  result: its tier, what it produced) and the manager's events give the trigger;
* after every manager call that changed the working list, the original messages no
  longer in it (as the same object or an equal copy) have left the verbatim context:
  their facts are extracted (:mod:`.facts`) and, after each compaction, every fact that
  has left so far is checked against the context (:mod:`.retention`);
* each request is compared with the previous one for the prompt cache (:mod:`.cache`).
"""

from __future__ import annotations

import operator
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..core.config import CompressionConfig
from ..core.errors import ConfigError
from ..core.messages import Message, ToolSchema
from ..core.report import CompressionResult
from ..core.tokens import message_tokens, tool_schema_tokens
from ..engine.compressor import ContextCompressor
from ..loop.background import InlineWorkers, SessionBackground
from ..loop.events import Event, EventKind
from ..loop.hooks import CompressionHook
from ..loop.manager import ContextManager
from ..summary.protocol import Summarizer
from .cache import CacheBreak, CachePrices, cache_break, settle
from .facts import Fact, message_facts, task_fact, user_text
from .report import CompactionRecord, EvalReport
from .retention import Retention
from .text import TextIndex

LOST_EXAMPLES = 50


class _Observer(CompressionHook):
    """Records each compaction the manager completes (a post-compress hook sees its
    result, tier included) and, from the events, its trigger and the warnings."""

    def __init__(self) -> None:
        self.done: list[tuple[CompressionResult, str]] = []
        self.warnings: list[str] = []

    def post_compress(self, result: CompressionResult) -> None:
        self.done.append((result, ""))

    def on_event(self, event: Event) -> None:
        if event.kind is EventKind.COMPACTION_FINISHED and self.done and not self.done[-1][1]:
            trigger = event.trigger.value if event.trigger else "unknown"
            self.done[-1] = (self.done[-1][0], trigger)
        elif event.kind is EventKind.WARNING:
            self.warnings.append(event.message)


class _ObservedCompressor(ContextCompressor):
    """The built-in compressor telling the observer of each compaction it completes.

    Used instead of the hook when evaluate() builds the compressor itself: a hook makes
    the manager plan each compaction twice (to hand ``pre_compress`` what will go).
    """

    def __init__(self, observer: _Observer, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.observer = observer

    def completed(self, messages: list[Message], result: CompressionResult) -> None:
        self.observer.post_compress(result)


@dataclass
class _Session:
    """The evaluation's state while one transcript is replayed."""

    engine: ContextCompressor
    observer: _Observer
    prices: CachePrices
    task: Message | None
    """The session's first real user message (its first 80 characters are a fact)."""
    index: TextIndex = field(default_factory=TextIndex)
    retention: Retention = field(default_factory=Retention)
    live: dict[int, Message] = field(default_factory=dict)
    """id of each object in the working list that stands for an original -> the original."""
    seen_results: int = 0
    records: list[CompactionRecord] = field(default_factory=list)
    tokens: dict[int, tuple[Message, int]] = field(default_factory=dict)

    def message_tokens(self, message: Message) -> int:
        found = self.tokens.get(id(message))
        if found is None or found[0] is not message:
            count = message_tokens(
                message, image_tokens=self.engine.config.image_tokens,
                count=self.engine.token_counter,
            )  # fmt: skip
            found = self.tokens[id(message)] = (message, count)
        return found[1]

    def appended(self, message: Message) -> None:
        self.live[id(message)] = message

    def changed(self, request: int, result: list[Message]) -> None:
        """After a manager call: departures, facts, and a check per new compaction."""
        new = self.observer.done[self.seen_results :]
        self.seen_results = len(self.observer.done)
        contexts = [r.messages for r, _ in new[:-1]] + [result]
        for (compaction, trigger), context in zip(new, contexts, strict=False):
            left, facts = self._departures(context)
            ordinal = len(self.records) + 1
            added = self.retention.add(facts, ordinal)
            self.retention.check(self.index.view(context))
            report = compaction.report
            self.records.append(
                CompactionRecord(
                    ordinal, request, trigger, report.tier.value if report.tier else None,
                    report.before_tokens, report.after_tokens, round(report.elapsed_ms, 3),
                    left, added,
                )
            )  # fmt: skip
        if not new:  # changed without a compaction (the last rungs cut tool results)
            self.retention.add(self._departures(result)[1], len(self.records) + 1)

    def _departures(self, context: list[Message]) -> tuple[int, list[Fact]]:
        present = {id(m) for m in context}
        gone = [key for key in self.live if key not in present]
        if not gone:
            return 0, []
        newcomers = [m for m in context if id(m) not in self.live]
        facts: list[Fact] = []
        left = 0
        for key in gone:
            original = self.live.pop(key)
            copy = next((m for m in newcomers if m == original), None)
            if copy is not None:  # an equal copy is still the verbatim message
                self.live[id(copy)] = original
                continue
            left += 1
            facts += message_facts(self.index.entry(original))
            if original is self.task:
                task = task_fact(original)
                facts += [task] if task is not None else []
        return left, facts


def evaluate(
    messages: Sequence[Message],
    *,
    context_length: int | None = None,
    tools: Sequence[ToolSchema] | None = None,
    config: CompressionConfig | None = None,
    max_tokens: int | None = None,
    model: str | None = None,
    summarizer: Summarizer | None = None,
    summary_context_length: int | None = None,
    cache_prices: CachePrices | None = None,
    name: str = "",
    progress: Callable[[int, int], None] | None = None,
    engine: ContextCompressor | None = None,
    background: SessionBackground | None = None,
) -> EvalReport:
    """Replay ``messages`` as the agent sent them and measure what compaction kept and cost.

    Arguments as for :func:`windowkeeper.replay`; ``cache_prices`` sets the prompt-cache
    model (:class:`~windowkeeper.evaluation.cache.CachePrices`), ``name`` labels the
    report, ``progress(done, total)`` is called per message. The input is not modified.

    ``engine`` evaluates that compressor (a configured or customised
    :class:`~windowkeeper.ContextCompressor`) instead of one built from the arguments;
    its own window and settings are used.

    ``background``: where background compactions run; by default at once on this thread
    (each job done before the request that started it goes out), so the report does not
    depend on threads' timing. A :class:`~windowkeeper.loop.background.SessionBackground`
    on worker threads measures a paced replay instead (``progress`` sets the pace).
    """
    observer = _Observer()
    hooks: list[CompressionHook] = [observer]
    if engine is None:
        if context_length is None:
            raise ConfigError("evaluate needs context_length (or an engine)")
        engine = _ObservedCompressor(
            observer, config=config, context_length=context_length, max_tokens=max_tokens,
            model=model, tools=list(tools) if tools else None, summarizer=summarizer,
            summary_context_length=summary_context_length,
        )  # fmt: skip
        hooks = []
    background = background or SessionBackground(InlineWorkers())
    manager = ContextManager(
        engine, tools=tools, hooks=hooks, on_event=observer.on_event, background=background
    )
    task = next((m for m in messages if user_text(m) is not None), None)
    session = _Session(engine, observer, cache_prices or CachePrices(), task)
    replayed = _replay(messages, manager, session, progress)
    return _report(name, len(messages), manager, session, replayed)


@dataclass
class _Replayed:
    tokens: list[int] = field(default_factory=list)
    baseline: list[int] = field(default_factory=list)
    breaks: list[CacheBreak] = field(default_factory=list)
    compactions_seen: int = 0
    cost: float = 0.0
    cost_without: float = 0.0


def _replay(
    messages: Sequence[Message],
    manager: ContextManager,
    session: _Session,
    progress: Callable[[int, int], None] | None,
) -> _Replayed:
    out = _Replayed()
    working: list[Message] = []
    sent: list[Message] = []
    sent_len = 0  # the list sent may grow afterwards: the replay appends to it
    baseline = tool_schema_tokens(manager.tools)
    for number, message in enumerate(messages, 1):
        if message.get("role") == "assistant" and working:
            previous, previous_len = sent, sent_len
            sent = manager.preflight(working)
            sent_len = len(sent)
            if sent is not working:
                session.changed(len(out.tokens), sent)
            _account(out, session, manager, sent, previous[:previous_len], baseline)
            after = manager.after_response({"prompt_tokens": out.tokens[-1]}, sent)
            if after is not sent:
                session.changed(len(out.tokens) - 1, after)
            working = after
        working.append(message)
        session.appended(message)
        baseline += session.message_tokens(message)
        if progress is not None:
            progress(number, len(messages))
    out.breaks = settle(out.breaks, len(out.tokens))
    return out


def _account(
    out: _Replayed,
    session: _Session,
    manager: ContextManager,
    sent: list[Message],
    previous: list[Message],
    baseline: int,
) -> None:
    """One request's tokens, its prompt-cache cost, and the cache break when it changed."""
    tokens = manager.estimate(sent)
    prices = session.prices
    if not out.tokens:
        prefix = cached_without = 0
    else:
        cached_without = out.baseline[-1]
        same = len(previous) <= len(sent) and all(map(operator.is_, previous, sent))
        prefix = out.tokens[-1] if same else _prefix_tokens(session, manager, previous, sent)
        if not same:
            compactions = len(session.records) - out.compactions_seen
            out.breaks.append(
                cache_break(
                    len(out.tokens), compactions, out.tokens[-1], prefix, tokens,
                    baseline - cached_without, prices,
                )
            )  # fmt: skip
    out.compactions_seen = len(session.records)
    out.cost += prices.request(prefix, tokens - prefix)
    out.cost_without += prices.request(cached_without, baseline - cached_without)
    out.tokens.append(tokens)
    out.baseline.append(baseline)


def _prefix_tokens(
    session: _Session, manager: ContextManager, before: list[Message], now: list[Message]
) -> int:
    """Tokens of the tool schemas and the leading messages ``now`` shares with ``before``
    (the same object or an equal one)."""
    total = manager.schema_tokens()
    for old, new in zip(before, now, strict=False):
        if old is not new and old != new:
            break
        total += session.message_tokens(new)
    return total


def _report(
    name: str, count: int, manager: ContextManager, session: _Session, replayed: _Replayed
) -> EvalReport:
    engine = session.engine
    lost = session.retention.lost()
    return EvalReport(
        name=name,
        context_length=engine.context_length,
        window=manager.window,
        threshold_tokens=engine.threshold_tokens,
        messages=count,
        tokens_per_request=tuple(replayed.tokens),
        baseline_per_request=tuple(replayed.baseline),
        over_window=sum(t > manager.window for t in replayed.tokens),
        compactions=tuple(session.records),
        compacting_ms=sum(r.report.elapsed_ms for r, _ in session.observer.done),
        retention_by_kind=session.retention.by_kind(),
        retention_by_age=session.retention.by_age(),
        cache_breaks=tuple(replayed.breaks),
        cache_prices=session.prices,
        cached_cost=replayed.cost,
        cached_cost_without=replayed.cost_without,
        lost=tuple(lost[:LOST_EXAMPLES]),
        lost_count=len(lost),
        warnings=tuple(dict.fromkeys((*engine.warnings, *session.observer.warnings))),
    )
