"""Overflow recovery over the real sessions when the configured window is too optimistic.

Every session is replayed request by request (each assistant message is one request
carrying everything before it) through a :class:`ContextManager` whose compressor is
configured with a window ``W``, against :class:`~windowkeeper.testing.provider_sim.LimitedProvider`
whose real limit is 60% of ``W``: for every provider wording (with and without a stated
limit) and a provider tokenizer that counts 15% less, the same, or 15% more than our
estimate. A session *completes* when every one of its requests was answered (recovery
spends at most 3 attempts per request). A session is *recoverable* when every request's
floor (system prompt, tool schemas, newest user message, a minimal handoff; in the
provider's tokens) fits the limit. Target: >= 95% of the recoverable sessions complete,
per wording and mismatch. Run: ``.venv/bin/python benchmarks/bench_overflow.py
[--window N ...] [--limit-share 0.6] [--sessions K] [--spurious-every N]``.
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Sequence

from common import markdown_table, session_paths
from windowkeeper import (
    estimate_request_tokens,
    parse_conversation,
)
from windowkeeper.core.messages import Message, ToolSchema
from windowkeeper.testing.provider_sim import WORDINGS, LimitedProvider, Wording, replay_limited

MISMATCHES = (0.85, 1.0, 1.15)


def _window(choice: str, messages: Sequence[Message], tools: list[ToolSchema] | None) -> int:
    if choice != "half":
        return int(choice)
    return max(8_000, estimate_request_tokens(messages, tools) // 2)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument(
        "--window",
        nargs="+",
        default=["32000", "64000", "128000", "half"],
        help="Configured windows W; 'half': each session's own total tokens / 2.",
    )
    parser.add_argument("--limit-share", type=float, default=0.6)
    parser.add_argument("--sessions", type=int, default=0, help="First K sessions (0: all).")
    parser.add_argument("--wording", nargs="*", default=[], help="Only these wordings.")
    parser.add_argument(
        "--spurious-every", type=int, default=0,
        help="Transient faults: after every N answered requests one is refused once as "
        "too large whatever its size (0: none).",
    )  # fmt: skip
    args = parser.parse_args()
    paths = session_paths()
    paths = paths[: args.sessions] if args.sessions else paths
    sessions = [parse_conversation(p.read_text(encoding="utf-8")) for p in paths]
    wordings: list[Wording] = [w for w in WORDINGS if not args.wording or w.name in args.wording]
    started = time.perf_counter()
    rows, failures, worst = [], [], 1.0
    for choice in args.window:
        for wording in wordings:
            cells = []
            for mismatch in MISMATCHES:
                done = rejected = recoverable = done_recoverable = 0
                for path, conversation in zip(paths, sessions, strict=True):
                    window = _window(choice, conversation.messages, conversation.tools)
                    limit = int(window * args.limit_share)
                    provider = LimitedProvider(
                        limit, wording, mismatch, conversation.tools, args.spurious_every
                    )
                    run = replay_limited(
                        conversation.messages, conversation.tools, window, provider
                    )
                    done += run.completed
                    rejected += run.rejections
                    recoverable += run.recoverable
                    done_recoverable += run.completed and run.recoverable
                    if not run.completed:
                        failures.append((window, wording.name, mismatch, path.stem, run))
                share = done_recoverable / recoverable if recoverable else 1.0
                worst = min(worst, share)
                cells.append(f"{done}/{len(sessions)}; recoverable {done_recoverable}/"
                             f"{recoverable} ({share:.0%}); {rejected} rejections")  # fmt: skip
            stated = "yes" if wording.states_limit else "no"
            shown = "session total / 2" if choice == "half" else f"{int(choice):,}"
            rows.append([shown, f"{args.limit_share:.0%} of W", wording.name, stated, *cells])
    header = ["window W", "real limit", "wording", "states limit",
              *(f"tokenizer x{m}" for m in MISMATCHES)]  # fmt: skip
    print(markdown_table(header, rows))
    print(f"\nsessions: {len(sessions)}; worst completion share of the recoverable: {worst:.1%}; "
          f"{time.perf_counter() - started:,.0f} s")  # fmt: skip
    for window, name, mismatch, stem, run in failures[:40]:
        kind = "recoverable" if run.recoverable else "floor over the limit"
        print(f"- W={window:,} {name} x{mismatch} {stem} ({kind}): request {run.requests}: "
              f"{run.failure[:300]}")  # fmt: skip


if __name__ == "__main__":
    main()
