"""Per-request overhead of the preflight check on a 5,000-message session.

Run: ``.venv/bin/python benchmarks/bench_preflight.py [--messages N] [--requests N]``.

The session is built by repeating the turns of the real sessions (or synthetic turns when
``../shared/data/sessions`` is absent) up to ``--messages``. The steady state of an agent
loop is measured: one new message is appended before each request, then
``ContextManager.preflight`` runs (the window is large enough that it never compacts, so
only the check is timed). The baseline is ``json.dumps`` of the request body, which every
client pays once per request anyway. Target: preflight <= 0.2x of that.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from typing import Any

from common import SESSIONS, markdown_table
from windowkeeper import ContextCompressor, load_conversation
from windowkeeper.core.messages import Message
from windowkeeper.loop.manager import ContextManager


def source_turns() -> list[Message]:
    """Non-system messages of the real sessions, or a synthetic coding session."""
    if SESSIONS.is_dir():
        turns = []
        for path in sorted(SESSIONS.glob("*.jsonl"))[:8]:
            turns += [m for m in load_conversation(path).messages if m["role"] != "system"]
        return turns
    from windowkeeper.cli.demo_view import load_demo_session

    return [m for m in load_demo_session() if m["role"] != "system"]


def build_session(size: int) -> list[Message]:
    turns = source_turns()
    session: list[Message] = [{"role": "system", "content": "You are a coding agent."}]
    while len(session) < size:
        # fresh dicts: a real session never holds the same message object twice
        session += [dict(m) for m in turns[: size - len(session)]]
    return session


def measure(size: int, requests: int) -> dict[str, Any]:
    session = build_session(size + requests)
    history, incoming = session[:size], session[size:]
    manager = ContextManager(ContextCompressor(context_length=100_000_000))
    started = time.perf_counter()
    manager.preflight(history)
    cold = time.perf_counter() - started
    checks, dumps = [], []
    for message in incoming:
        history = [*history, message]
        started = time.perf_counter()
        assert manager.preflight(history) is history
        checks.append(time.perf_counter() - started)
        started = time.perf_counter()
        json.dumps({"model": "m", "messages": history})
        dumps.append(time.perf_counter() - started)
    check, dump = statistics.median(checks), statistics.median(dumps)
    return {
        "messages": size,
        "body_mb": round(len(json.dumps({"messages": history})) / 1e6, 2),
        "cold_ms": round(cold * 1000, 2),
        "preflight_ms": round(check * 1000, 3),
        "dumps_ms": round(dump * 1000, 3),
        "ratio": round(check / dump, 3),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--messages", type=int, nargs="*", default=[1_000, 5_000])
    parser.add_argument("--requests", type=int, default=50)
    args = parser.parse_args()
    rows = [measure(size, args.requests) for size in args.messages]
    header = list(rows[0])
    print(markdown_table(header, [[row[k] for k in header] for row in rows]))


if __name__ == "__main__":
    main()
