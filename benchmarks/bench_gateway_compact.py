"""Gateway: the latency a request that compacts adds, Chat Completions and Anthropic Messages.

Run: ``.venv/bin/python benchmarks/bench_gateway_compact.py [--requests N] [--rounds N]
[--against DIR] [--profile DIR]``.

Three processes on loopback, as in ``bench_gateway.py``: the loopback upstream (answers at
once), the gateway (``windowkeeper serve`` at a 16K window) and this load generator. Every
request is a ~25K-token history (the test factories' long session) in a session of its own,
so each one is compacted (to ~7.6K tokens) before it goes upstream. Direct and gateway
batches alternate over ``--rounds``; the table shows per protocol the p50 / p90 / p99 / max
latency through the gateway, the added p50 (gateway p50 − direct p50 of the same bodies),
how many requests took over 100 ms more than the direct median, and the gateway's CPU per
request. ``--against DIR`` runs the gateway of another checkout (``DIR/src`` first on its
path) at the same time, the two taking turns round by round, and adds the median over
rounds of this gateway's CPU ÷ the other's in the same round. ``--profile DIR`` runs the
gateway under ``py-spy record`` (if installed) and writes one raw profile per protocol
there; ``--gc-trace`` has the gateway print the wall time of each full (generation 2)
garbage collection when it exits.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import statistics
import subprocess
import sys
import time

import httpx

from bench_gateway import UPSTREAM, cpu_seconds, pct, process, wait_up
from common import ROOT, markdown_table

sys.path.insert(0, str(ROOT / "tests"))
from factories import long_session
from windowkeeper.adapters.anthropic_write import to_anthropic
from windowkeeper.testing import unused_port

GATEWAY = """
import sys
if "gc-trace" in sys.argv[5:]:  # every full collection's wall time, printed at exit
    import atexit, gc, time
    full, started = [], [0.0]
    def trace(phase, info):
        if info["generation"] == 2:
            if phase == "start":
                started[0] = time.perf_counter()
            else:
                full.append(round((time.perf_counter() - started[0]) * 1000))
    gc.callbacks.append(trace)
    atexit.register(lambda: print(f"full collections (ms): {full}", file=sys.stderr))
from windowkeeper.cli.serve import serve_command
serve_command(upstream=sys.argv[1], anthropic_upstream=sys.argv[2], port=int(sys.argv[3]),
              context_length=int(sys.argv[4]), log_level="warning")
"""
WINDOW = [16_000]
"""The gateway's window (``--window``; far above the history: the fresh-body path alone)."""
PATHS = {"chat": "/v1/chat/completions", "messages": "/v1/messages"}


def bodies(protocol: str, count: int, tag: str) -> list[bytes]:
    """``count`` ~25K-token histories, each first user message made unique by ``tag``."""
    history = long_session(rounds=25, output_chars=4_000)
    out = []
    for number in range(count):
        first = {**history[1], "content": f"{history[1]['content']} ({tag} {number})"}
        messages = [history[0], first, *history[2:]]
        if protocol == "chat":
            body = {"model": "bench", "messages": messages}
        else:
            system, wire = to_anthropic(messages)
            body = {"model": "bench", "max_tokens": 256, "system": system, "messages": wire}
        out.append(json.dumps(body).encode())
    return out


async def post_all(url: str, payloads: list[bytes], tag: str) -> list[float]:
    """Latencies (s) of one keep-alive client posting each body, each its own session."""
    samples = []
    async with httpx.AsyncClient(timeout=120, trust_env=False) as http:
        for number, payload in enumerate(payloads):
            headers = {"content-type": "application/json", "x-api-key": "bench",
                       "anthropic-version": "2023-06-01",
                       "x-windowkeeper-session": f"{tag}-{number}"}  # fmt: skip
            started = time.perf_counter()
            response = await http.post(url, content=payload, headers=headers)
            samples.append(time.perf_counter() - started)
            if response.status_code != 200:
                raise SystemExit(f"HTTP {response.status_code}: {response.text[:300]}")
    return samples


def run_gateway(upstream: str, src: str | None, profile: str | None, label: str,
                trace: bool) -> tuple[subprocess.Popen[str], str]:  # fmt: skip
    port = unused_port()
    args = [f"{upstream}/v1", upstream, str(port), str(WINDOW[0])]
    prefix: list[str] = []
    spy = shutil.which("py-spy", path=f"{os.path.dirname(sys.executable)}:{os.defpath}")
    if profile and spy:
        out = os.path.join(profile, f"{label}.txt")
        prefix = [spy, "record", "--format", "raw", "--rate", "1000", "-o", out, "--"]
    env = {**os.environ, "PYTHONPATH": src} if src else None
    if trace:
        args.append("gc-trace")
    child = subprocess.Popen([*prefix, sys.executable, "-c", GATEWAY, *args],
                             stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, text=True,
                             env=env)  # fmt: skip
    return child, f"http://127.0.0.1:{port}"


def measure(upstream: str, protocol: str, requests: int, rounds: int,
            gateways: list[tuple[str, str | None]], profile: str | None,
            trace: bool = False) -> dict[str, dict[str, list[float]]]:  # fmt: skip
    """Per gateway: latencies of direct and gateway batches of one protocol, and its CPU
    per request in each round. With two gateways both run at once and take turns round
    by round (the order alternating), so a drift of the machine's load hits both alike."""
    running = [(label, *run_gateway(upstream, src, profile, f"{label}-{protocol}", trace))
               for label, src in gateways]  # fmt: skip
    figures: dict[str, dict[str, list[float]]] = {
        label: {"direct": [], "via": [], "cpu": []} for label, _ in gateways
    }
    try:
        for _label, _, base in running:
            wait_up(f"{base}/healthz")
            asyncio.run(post_all(base + PATHS[protocol], bodies(protocol, 5, "warm"), "warm"))
        batch = max(1, requests // rounds)
        for number in range(rounds):
            payloads = bodies(protocol, batch, f"round{number}")
            for label, gateway, base in running if number % 2 == 0 else running[::-1]:
                out = figures[label]
                out["direct"] += asyncio.run(post_all(upstream + PATHS[protocol], payloads, "d"))
                before = _cpu(gateway.pid)
                out["via"] += asyncio.run(post_all(base + PATHS[protocol], payloads,
                                                   f"{label}{number}"))  # fmt: skip
                out["cpu"].append((_cpu(gateway.pid) - before) / batch)
        return figures
    finally:
        for _, gateway, _ in running:
            gateway.send_signal(2) if profile else gateway.terminate()
            gateway.wait(timeout=60)


def _cpu(pid: int) -> float:
    """CPU seconds of the gateway (under py-spy: its child, the Python process)."""
    try:
        with open(f"/proc/{pid}/task/{pid}/children") as children:
            child = children.read().split()
    except OSError:
        child = []
    return cpu_seconds(int(child[0])) if child else cpu_seconds(pid)


def row(label: str, protocol: str, figures: dict[str, list[float]]) -> list[str]:
    direct, via = figures["direct"], figures["via"]
    base = pct(direct, 0.5)
    slow = sum(1 for s in via if s * 1000 - base > 100)
    return [label, protocol, str(len(via)), f"{base:.2f}", f"{pct(via, .5):.2f}",
            f"{pct(via, .5) - base:+.2f}", f"{pct(via, .9):.2f}", f"{pct(via, .99):.2f}",
            f"{max(via) * 1000:.2f}", str(slow),
            f"{statistics.median(figures['cpu']) * 1000:.2f}"]  # fmt: skip


HEADER = ["gateway", "protocol", "requests", "direct p50 ms", "gateway p50 ms", "added p50",
          "p90 ms", "p99 ms", "max ms", "> +100 ms", "gateway CPU ms/req"]  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=100)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--against", help="a checkout whose gateway to alternate with")
    parser.add_argument("--profile", help="write py-spy raw profiles here")
    parser.add_argument("--window", type=int, default=16_000)
    parser.add_argument(
        "--gc-trace",
        action="store_true",
        help="the gateway prints each full collection's wall time at exit",
    )
    args = parser.parse_args()
    WINDOW[0] = args.window
    sample = json.loads(bodies("chat", 1, "size")[0])
    from windowkeeper.core.tokens import estimate_messages_tokens

    tokens = estimate_messages_tokens(sample["messages"])
    print(f"history: {len(sample['messages'])} messages, ~{tokens} tokens; window {args.window}\n")
    gateways = [("this", None)]
    if args.against:
        gateways.append(("other", os.path.join(args.against, "src")))
    rows = []
    with process(UPSTREAM, "0") as upstream:
        assert upstream.stdout is not None
        url = f"http://127.0.0.1:{upstream.stdout.readline().strip()}"
        for protocol in PATHS:
            figures = measure(url, protocol, args.requests, args.rounds, gateways,
                              args.profile, args.gc_trace)  # fmt: skip
            for label, _ in gateways:
                rows.append([*row(label, protocol, figures[label]), paired(figures, label)])
    print(markdown_table([*HEADER, "CPU ÷ other's, paired"], rows))


def paired(figures: dict[str, dict[str, list[float]]], label: str) -> str:
    """The median over rounds of this gateway's CPU ÷ the other's in the same round."""
    if "other" not in figures or label == "other":
        return "—"
    pairs = zip(figures[label]["cpu"], figures["other"]["cpu"], strict=True)
    return f"{statistics.median(c / o for c, o in pairs if o):.3f}"


if __name__ == "__main__":
    main()
