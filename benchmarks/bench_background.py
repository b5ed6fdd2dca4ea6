"""Background compaction on every real session: how long the agent waits on compaction
turns, and what applied background results keep (issue 26).

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
violations.

**Retention.** ``evaluate()`` (eval's retention of facts) on every session, foreground
and background, with a summarizer that answers at once. At the trigger the manager waits
for a running job rather than starting another, so which history a job is made from and
where it is applied do not depend on timing: the background results measured here are
the ones of the timed run. The bar: background retention within 2 percentage points of
the foreground's.

Run: ``.venv/bin/python benchmarks/bench_background.py [--window 16000] [--processes 12]``.
Sessions come from ``../shared/data/sessions``; without them the script says so and exits.
"""

from __future__ import annotations

import argparse
import multiprocessing
import statistics
import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from common import markdown_table, session_paths
from windowkeeper import EvalTotals, evaluate, parse_conversation
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


def summarizer(base_url: str) -> LLMSummarizer:
    config = LLMSummarizerConfig(
        model="summ", base_url=base_url, api_key="sk-bench", timeout=60.0,
        context_length=1_000_000,
    )  # fmt: skip
    return LLMSummarizer(config)


def timed(job: tuple[str, bool, str, int, float]) -> tuple[list[Turn], int, int]:
    """Replay one session through ``ContextManager.run``: its compaction turns, the
    requests sent and how many of them broke an invariant."""
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
    sent = invalid = 0

    def call(request: list[Message]) -> dict[str, Any]:
        nonlocal sent, invalid
        sent += 1
        invalid += bool(violations(request))
        time.sleep(agent_seconds)
        return {"usage": {"prompt_tokens": manager.estimate(request)}}

    working: list[Message] = []
    for message in conversation.messages:
        if message.get("role") == "assistant" and working:
            working = manager.run(call, working).messages
        working.append(message)
    return _turns(Path(path).stem, background, events), sent, invalid


def _turns(name: str, background: bool, events: list[Event]) -> list[Turn]:
    turns, discarded = [], None
    for event in events:
        if event.kind is EventKind.BACKGROUND_DISCARDED:
            discarded = event.reason
        elif event.kind is EventKind.COMPACTION_FINISHED and event.receipt is not None:
            receipt = event.receipt
            why = None if receipt.background else discarded
            turns.append(Turn(name, background, receipt.background, receipt.waited_ms,
                              receipt.tier.value, why))  # fmt: skip
            discarded = None
    return turns


def retention(paths: list[Path], window: int, base_url: str) -> dict[bool, EvalTotals]:
    totals = {}
    for background in (False, True):
        reports = []
        for path in paths:
            conversation = parse_conversation(path.read_text(encoding="utf-8"))
            reports.append(evaluate(
                conversation.messages, context_length=window, tools=conversation.tools,
                config=CompressionConfig(background=background), summarizer=summarizer(base_url),
                summary_context_length=1_000_000, name=path.stem,
            ))  # fmt: skip
        totals[background] = EvalTotals.of(reports)
    return totals


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


def report_waits(turns: list[Turn], sent: int, invalid: int, args: argparse.Namespace) -> None:
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
    why = Counter(t.discarded or "no job before the trigger" for t in on if not t.applied)
    applied = [t.waited_ms for t in on if t.applied]
    print(f"\nbackground run, foreground compactions by cause: {dict(why)}")
    if applied:
        print(f"applied results: p50 wait {statistics.median(applied):.1f} ms, "
              f"max {max(applied):,.0f} ms over {len(applied)}")  # fmt: skip
    print(f"requests sent: {sent:,}; with an invariant violation: {invalid}")


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
    paths = session_paths(args.only)
    if not args.skip_waits:
        slow = Reply.delay(args.summary_seconds, Reply.turn(SUMMARY))
        with LoopbackUpstream(default=slow, record=False, fast=True) as upstream:
            longest = sorted(paths, key=lambda p: -p.stat().st_size)  # first: they set the pace
            jobs = [(str(p), bg, upstream.base_url, args.window, args.agent_seconds)
                    for p in longest for bg in (False, True)]  # fmt: skip
            started = time.monotonic()
            with multiprocessing.get_context("spawn").Pool(args.processes) as pool:
                results = pool.map(timed, jobs, chunksize=1)
            elapsed = time.monotonic() - started
        turns = [t for found, _, _ in results for t in found]
        report_waits(turns, sum(r[1] for r in results), sum(r[2] for r in results), args)
        print(f"wall time: {elapsed:,.0f} s")
    if not args.skip_retention:
        with LoopbackUpstream(default=Reply.turn(SUMMARY), record=False, fast=True) as upstream:
            report_retention(retention(paths, args.window, upstream.base_url))


if __name__ == "__main__":
    main()
