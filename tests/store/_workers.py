"""Code that runs in child processes (concurrency and crash tests) and shared builders."""

from __future__ import annotations

import hashlib
import json
from datetime import date
from typing import Any

from windowkeeper import ContextCompressor
from windowkeeper.core.messages import Message
from windowkeeper.store import SessionStore, open_store
from windowkeeper.store.session import compact_session


def make_compressor() -> ContextCompressor:
    """Deterministic: the same input gives the same output in every process."""
    return ContextCompressor(context_length=12_000, today=lambda: date(2025, 1, 1))


def round_messages(tag: str, rounds: int = 3, output_chars: int = 3_000) -> list[Message]:
    """Tool-heavy turns with unique content (so every appended row is distinguishable)."""
    messages: list[Message] = [{"role": "user", "content": f"[{tag}] continue the refund fix"}]
    for n in range(rounds):
        cid = f"call_{tag}_{n}"
        args = json.dumps({"command": f"pytest tests/test_{tag}_{n}.py"})
        messages.append({
            "role": "assistant", "content": None,
            "tool_calls": [{"id": cid, "type": "function",
                            "function": {"name": "bash", "arguments": args}}],
        })  # fmt: skip
        line = f"{tag} line {n} " + "y" * 50 + "\n"
        body = line * (output_chars // len(line)) + f"token{tag}x{n} [exit code 0]"
        messages.append({"role": "tool", "tool_call_id": cid, "content": body})
        messages.append({"role": "assistant", "content": f"[{tag}] step {n} passed."})
    return messages


def row_digest(message: Message) -> str:
    return hashlib.sha256(json.dumps(message, sort_keys=True).encode()).hexdigest()


def appended_digests(store: SessionStore, session_id: str) -> list[str]:
    """Digests of every row the agent appended (active or archived), sorted."""
    rows = store.load(session_id, include_archived=True).rows
    return sorted(row_digest(r.message) for r in rows if r.origin == "append")


def compact_rounds(url: str, session_id: str, rounds: int, barrier: Any, results: Any) -> None:
    """One of N racing processes. Per round: read, wait for all readers, compact, wait."""
    compressor = make_compressor()
    with open_store(url) as store:
        for number in range(rounds):
            barrier.wait(timeout=60)
            snapshot = store.load(session_id)
            barrier.wait(timeout=60)
            done = compact_session(store, session_id, compressor, force=True, snapshot=snapshot)
            report = done.result.report
            results.put((number, report.outcome.value, str(report.reason),
                         len(done.result.messages)))  # fmt: skip
            barrier.wait(timeout=60)
