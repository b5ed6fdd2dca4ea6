"""The hot scans of a compaction alone, over every text of the real sessions: CPU time.

Run: ``.venv/bin/python benchmarks/bench_scans.py [--against DIR] [--rounds N]``.

Each scan runs over what it reads in a compaction, taken from all 38 sessions: the exit
code of every tool output, the error lines of every message's text (its head and tail
window), the token estimate of every message with tool calls, and a fresh request body's
parse by the gateway among 200 bodies of other sessions (Chat and Anthropic Messages).
Each figure is the median over ``--rounds`` of one pass, every round in a fresh process;
with ``--against DIR`` the checkout in ``DIR/src`` runs in the same rounds, alternated,
so both see the same machine.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from typing import Any

from common import ROOT, markdown_table, session_paths

SCANS = ("exit codes", "error lines", "tool-call tokens", "chat body parse", "messages body parse")


def _messages() -> list[dict[str, Any]]:
    out = []
    for path in session_paths():
        out += [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line]
    return out


def _bodies(protocol: str) -> list[bytes]:
    sys.path.insert(0, str(ROOT / "tests"))
    from factories import long_session
    from windowkeeper.adapters.anthropic_write import to_anthropic

    bodies = []
    for number in range(201):
        history = long_session(rounds=25, output_chars=4_000)
        history[1] = {**history[1], "content": f"{history[1]['content']} ({number})"}
        if protocol == "messages":
            system, wire = to_anthropic(history)
            bodies.append(json.dumps({"model": "m", "system": system, "messages": wire}).encode())
        else:
            bodies.append(json.dumps({"model": "m", "messages": history}).encode())
    return bodies


def runners() -> dict[str, Callable[[], object]]:
    """One pass of each scan (call in a fresh process)."""
    from windowkeeper.analysis.facts import window
    from windowkeeper.analysis.outputs import error_lines
    from windowkeeper.analysis.toolshapes import exit_code
    from windowkeeper.core.tokens import message_tokens
    from windowkeeper.gateway.bodies import BodyParser

    messages = _messages()
    texts = [m["content"] for m in messages if isinstance(m.get("content"), str)]
    outputs = [m["content"] for m in messages if m.get("role") == "tool" and isinstance(
        m.get("content"), str)]  # fmt: skip
    windows = [window(text) for text in texts]
    with_calls = [m for m in messages if m.get("tool_calls")]

    def parse(protocol: str) -> Callable[[], object]:
        bodies = _bodies(protocol)

        def run() -> object:
            parser = BodyParser()
            for body in bodies[:200]:
                parser.parse(body, "messages", "scope", protocol)
            started = time.process_time()
            parser.parse(bodies[200], "messages", "scope", protocol)
            return time.process_time() - started

        return run

    return {
        "exit codes": lambda: [exit_code(text) for text in outputs],
        "error lines": lambda: [error_lines(text) for text in windows],
        "tool-call tokens": lambda: [message_tokens(m) for m in with_calls],
        "chat body parse": parse("chat"),
        "messages body parse": parse("messages"),
    }


def one_round() -> dict[str, float]:
    figures = {}
    for name, run in runners().items():
        run()  # warm: regexes compiled, caches as in a running process
        started = time.process_time()
        result = run()
        spent = time.process_time() - started
        figures[name] = result if isinstance(result, float) else spent
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--against", help="a checkout to alternate with")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--one", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.one:
        print(json.dumps(one_round()))
        return
    checkouts = {"this": None} if not args.against else {"this": None, "other": args.against}
    rounds: dict[str, list[dict[str, float]]] = {name: [] for name in checkouts}
    for _ in range(args.rounds):
        for name, other in checkouts.items():
            env = None
            if other:
                env = {**os.environ, "PYTHONPATH": os.path.join(other, "src")}
            done = subprocess.run([sys.executable, __file__, "--one"], capture_output=True,
                                  text=True, check=True, env=env)  # fmt: skip
            rounds[name].append(json.loads(done.stdout))
    header = ["scan", *(f"{name} ms" for name in checkouts)]
    rows = [
        [scan, *(f"{statistics.median(r[scan] for r in rounds[n]) * 1e3:.2f}" for n in checkouts)]
        for scan in SCANS
    ]
    print(markdown_table(header, rows))


if __name__ == "__main__":
    main()
