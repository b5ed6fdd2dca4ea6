"""Background compaction on every real session: how long the agent waits on compaction
turns, how far requests go past the trigger meanwhile, and what applied background
results keep (issues 26 and 26's follow-up: the agent (nearly) never waits).

**Waits.** Each session is replayed through the manager's sync driver
(``ContextManager.run``) at a 16K window, with the LLM summarizer against the loopback
OpenAI server (``windowkeeper.testing.loopback``) answering every summary after
``--summary-seconds`` (3 s). Each model call of the agent takes ``--agent-seconds`` (2 s:
a model answer plus a tool run, the low end of a tool-using agent's turn) and answers
with the request's own estimate as the real usage, as ``replay`` does. Every session runs
twice, with background compaction off (the foreground, as before) and on; sessions run in
``--processes`` worker processes at once (sleeping agents, so the machine's two cores
are not what is measured). The wait of a compaction turn is its receipt's ``waited_ms``:
the time the request was held, from the trigger to the compacted list (for an applied
job: what was left of it, plus applying). Every request sent is checked for invariant
violations and against the window; the requests sent past the trigger are counted with
how far past it they went.

**Retention.** ``evaluate()`` (eval's retention of facts) on every session, foreground
(a summarizer that answers at once: the foreground does not depend on timing) and
background. A background job is applied at the first request that finds it ready, so
which history it was made from and where it is applied depend on timing: the background
evaluation runs at the timed run's pace (the same 3 s summarizer, jobs on a worker
thread; evaluate's replay makes no model call, so ``--agent-seconds`` pass after each
request is answered, before the next one). Its compactions are not the timed run's one
for one, but they come from the same rules at the same pace. The bar: background
retention within 2 percentage points of the foreground's.

Run: ``.venv/bin/python benchmarks/bench_background.py [--window 16000] [--processes 12]``.
Sessions come from ``../shared/data/sessions``; without them the script says so and exits.
"""

from __future__ import annotations

import argparse
import multiprocessing
import statistics
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from common import markdown_table, session_paths
from windowkeeper import EvalReport, EvalTotals, evaluate, parse_conversation
from windowkeeper.core.config import CompressionConfig
from windowkeeper.core.invariants import violations
from windowkeeper.core.messages import Message
from windowkeeper.engine.compressor import ContextCompressor
from windowkeeper.loop.background import SessionBackground, Workers
from windowkeeper.loop.events import Event, EventKind
from windowkeeper.loop.manager import ContextManager
from windowkeeper.summary.llm.config import LLMSummarizerConfig
from windowkeeper.summary.llm.summarizer import LLMSummarizer
from windowkeeper.testing.loopback import LoopbackUpstream, Reply

SUMMARY = (
    "## Work State\nIn progress: continuing the task from the newest messages.\n\n"
    "## Key Decisions\nNone\n\n## Next Step\nContinue with the step the agent was on."
)
FAST_ENOUGH_MS = 50.0


@dataclass(frozen=True)
class Turn:
    """One compaction turn of a timed replay."""

    session: str
    background: bool
    """The run had background compaction on."""
    applied: bool
    """Its result was prepared in the background."""
    waited_ms: float
    tier: str
    discarded: str | None
    deferred: int
    """Requests that went out past the trigger before it (its receipt's count)."""


@dataclass
class Run:
    """One timed replay: its compaction turns and what it sent."""

    background: bool
    turns: list[Turn] = field(default_factory=list)
    sent: int = 0
    invalid: int = 0
    """Requests with an invariant violation."""
    over_window: int = 0
    """Requests whose estimate reached the usable window."""
    past_trigger: list[float] = field(default_factory=list)
    """Each request sent at or over the trigger: its size as a share of the trigger."""
    window_share: list[float] = field(default_factory=list)
    """The same requests as a share of the usable window."""


def summarizer(base_url: str) -> LLMSummarizer:
    config = LLMSummarizerConfig(
        model="summ", base_url=base_url, api_key="sk-bench", timeout=60.0,
        context_length=1_000_000,
    )  # fmt: skip
    return LLMSummarizer(config)


def timed(job: tuple[str, bool, str, int, float]) -> Run:
    """Replay one session through ``ContextManager.run``: its compaction turns and what
    it sent."""
    path, background, base_url, window, agent_seconds = job
    import openai  # noqa: F401  (imported before timing: the summarizer loads it lazily)

    conversation = parse_conversation(Path(path).read_text(encoding="utf-8"))
    engine = ContextCompressor(
        CompressionConfig(background=background), context_length=window,
        tools=conversation.tools, summarizer=summarizer(base_url),
        summary_context_length=1_000_000,
    )  # fmt: skip
    events: list[Event] = []
    manager = ContextManager(
        engine, tools=conversation.tools, on_event=events.append,
        background=SessionBackground(Workers(1)),
    )  # fmt: skip
    run = Run(background)

    def call(request: list[Message]) -> dict[str, Any]:
        tokens = manager.estimate(request)
        run.sent += 1
        run.invalid += bool(violations(request))
        run.over_window += tokens >= manager.window
        if tokens >= manager.threshold:
            run.past_trigger.append(tokens / manager.threshold)
            run.window_share.append(tokens / manager.window)
        time.sleep(agent_seconds)
        return {"usage": {"prompt_tokens": tokens}}

    working: list[Message] = []
    for message in conversation.messages:
        if message.get("role") == "assistant" and working:
            working = manager.run(call, working).messages
        working.append(message)
    run.turns = _turns(Path(path).stem, background, events)
    return run


def _turns(name: str, background: bool, events: list[Event]) -> list[Turn]:
    turns, discarded = [], None
    for event in events:
        if event.kind is EventKind.BACKGROUND_DISCARDED:
            discarded = event.reason
        elif event.kind is EventKind.COMPACTION_FINISHED and event.receipt is not None:
            receipt = event.receipt
            why = None if receipt.background else discarded
            turns.append(Turn(name, background, receipt.background, receipt.waited_ms,
                              receipt.tier.value, why, receipt.deferred_requests))  # fmt: skip
            discarded = None
    return turns


def evaluated(job: tuple[str, bool, str, int, float]) -> EvalReport:
    """eval's measure of one session: foreground, or background at the timed pace (jobs
    on a worker thread; each request's turn takes ``agent_seconds``)."""
    path, background, base_url, window, agent_seconds = job
    conversation = parse_conversation(Path(path).read_text(encoding="utf-8"))
    messages = conversation.messages

    def pace(done: int, total: int) -> None:
        if messages[done - 1].get("role") == "assistant":  # a request was just answered
            time.sleep(agent_seconds)

    return evaluate(
        messages, context_length=window, tools=conversation.tools,
        config=CompressionConfig(background=background), summarizer=summarizer(base_url),
        summary_context_length=1_000_000, name=Path(path).stem,
        progress=pace if background else None,
        background=SessionBackground(Workers(1)) if background else None,
    )  # fmt: skip


def _kept(totals: EvalTotals) -> tuple[int, int]:
    kinds = totals.retention_by_kind
    return sum(k.kept_at_end for k in kinds), sum(k.facts for k in kinds)


def _waits(turns: list[Turn]) -> list[object]:
    waits = sorted(t.waited_ms for t in turns)
    if not waits:
        return ["-"] * 6
    fast = sum(w <= FAST_ENOUGH_MS for w in waits)
    p90 = waits[min(len(waits) - 1, int(0.9 * len(waits)))]
    return [len(waits), f"{statistics.median(waits):,.0f}", f"{p90:,.0f}", f"{max(waits):,.0f}",
            f"{fast}/{len(waits)} ({fast / len(waits):.0%})",
            sum(t.applied for t in turns)]  # fmt: skip


def _share(values: list[float]) -> str:
    if not values:
        return "-"
    ordered = sorted(values)
    p90 = ordered[min(len(ordered) - 1, int(0.9 * len(ordered)))]
    return f"{statistics.median(ordered):.3f} / {p90:.3f} / {ordered[-1]:.3f}"


def _causes(turns: list[Turn]) -> dict[str, int]:
    """Applied from the background, or the discard (``superseded``: a running job dropped
    for this compaction) or none, with the tier the compaction then ran."""
    return dict(
        Counter(
            "applied" if t.applied else f"{t.discarded or 'no job ready'} -> {t.tier}"
            for t in turns
        )
    )


def report_waits(runs: list[Run], args: argparse.Namespace) -> None:
    turns = [t for r in runs for t in r.turns]
    print(f"\n### Waits at {args.window // 1000}K (summary {args.summary_seconds:g} s, "
          f"agent call {args.agent_seconds:g} s, {args.processes} processes)\n")  # fmt: skip
    header = ["run", "compactions", "p50 ms", "p90 ms", "max ms", f"<= {FAST_ENOUGH_MS:.0f} ms",
              "applied from background"]  # fmt: skip
    rows = [
        [f"{run}{label}", *_waits([t for t in turns if t.background is on and keep(t)])]
        for label, keep in (("", lambda t: True), (", summary tier", lambda t: t.tier == "summary"))
        for run, on in (("foreground", False), ("background", True))
    ]
    print(markdown_table(header, rows))
    on = [t for t in turns if t.background]
    print(f"\nbackground run, compactions by cause: {_causes(on)}")
    slow = [t for t in on if t.waited_ms > FAST_ENOUGH_MS]
    print(f"background run, waits over {FAST_ENOUGH_MS:.0f} ms by cause: {_causes(slow)}")
    applied = [t.waited_ms for t in on if t.applied]
    if applied:
        print(f"applied results: p50 wait {statistics.median(applied):.1f} ms, "
              f"max {max(applied):,.0f} ms over {len(applied)}")  # fmt: skip
    deferred = [t.deferred for t in on]
    if deferred:
        print(f"requests past the trigger before each background-run compaction: "
              f"p50 {statistics.median(deferred):g}, max {max(deferred)}")  # fmt: skip
    print()
    header = ["run", "requests", "invariant violations", "at or over the window",
              "at or over the trigger", "their size / trigger (p50 / p90 / max)",
              "their size / window (p50 / p90 / max)"]  # fmt: skip
    rows = []
    for name, flag in (("foreground", False), ("background", True)):
        mine = [r for r in runs if r.background is flag]
        past = [x for r in mine for x in r.past_trigger]
        share = [x for r in mine for x in r.window_share]
        rows.append([name, sum(r.sent for r in mine), sum(r.invalid for r in mine),
                     sum(r.over_window for r in mine), len(past), _share(past),
                     _share(share)])  # fmt: skip
    print(markdown_table(header, rows))


def report_retention(totals: dict[bool, EvalTotals]) -> None:
    print("\n### Retention (eval's measure: facts findable after the last compaction)\n")
    rows = []
    for background, total in totals.items():
        kept, facts = _kept(total)
        rows.append(["background" if background else "foreground", total.compactions,
                     f"{kept}/{facts}", f"{kept / facts:.2%}" if facts else "-",
                     f"{total.cumulative_tokens:,}"])  # fmt: skip
    print(markdown_table(["run", "compactions", "facts kept", "share", "cumulative tokens"], rows))
    (fk, ff), (bk, bf) = _kept(totals[False]), _kept(totals[True])
    if ff and bf:
        print(f"\ndifference: {100 * (bk / bf - fk / ff):+.2f} percentage points")


def _pooled(fn: Any, jobs: list[Any], processes: int) -> list[Any]:
    with multiprocessing.get_context("spawn").Pool(processes) as pool:
        return pool.map(fn, jobs, chunksize=1)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--window", type=int, default=16_000)
    parser.add_argument("--summary-seconds", type=float, default=3.0)
    parser.add_argument("--agent-seconds", type=float, default=2.0)
    parser.add_argument("--processes", type=int, default=12)
    parser.add_argument("--only", default="", help="session name prefix")
    parser.add_argument("--skip-waits", action="store_true")
    parser.add_argument("--skip-retention", action="store_true")
    args = parser.parse_args()
    paths = sorted(session_paths(args.only), key=lambda p: -p.stat().st_size)  # longest first
    slow = Reply.delay(args.summary_seconds, Reply.turn(SUMMARY))
    with LoopbackUpstream(default=slow, record=False, fast=True) as upstream:
        if not args.skip_waits:
            jobs = [(str(p), bg, upstream.base_url, args.window, args.agent_seconds)
                    for p in paths for bg in (False, True)]  # fmt: skip
            started = time.monotonic()
            runs = _pooled(timed, jobs, args.processes)
            report_waits(runs, args)
            print(f"wall time: {time.monotonic() - started:,.0f} s")
        if not args.skip_retention:
            jobs = [(str(p), True, upstream.base_url, args.window, args.agent_seconds)
                    for p in paths]  # fmt: skip
            started = time.monotonic()
            background = _pooled(evaluated, jobs, args.processes)
            print(f"\nbackground evaluation wall time: {time.monotonic() - started:,.0f} s")
    if not args.skip_retention:
        with LoopbackUpstream(default=Reply.turn(SUMMARY), record=False, fast=True) as fast:
            jobs = [(str(p), False, fast.base_url, args.window, 0.0) for p in paths]
            foreground = _pooled(evaluated, jobs, min(args.processes, 2))
        totals = {False: EvalTotals.of(foreground), True: EvalTotals.of(background)}
        report_retention(totals)


if __name__ == "__main__":
    main()
