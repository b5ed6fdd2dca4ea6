"""Gateway overhead: added latency and CPU per request, over real HTTP on loopback.

Run: ``.venv/bin/python benchmarks/bench_gateway.py [--requests N] [--variants]
[--model-latency S] [--growing]``.

Three processes: the loopback upstream (answers at once), the gateway (``windowkeeper
serve`` under uvicorn) and this load generator (a lean keep-alive client, so the client's
own cost does not hide the gateway's). Every request is the same 100-message, ~220 KiB
chat history that needs no compaction (the window is far larger), one session per client.
For 1, 16 and 64 concurrent clients the same number of requests goes to the upstream
directly and through the gateway; the table shows p50 / p99 latency of both and the
difference. The gateway's CPU per request (user + system time of its process, from
/proc, over the concurrency-1 run) is divided by what one ``json.loads`` plus one
``json.dumps`` of the body costs in this process.

``--growing`` adds one client whose history grows by two messages per request (a new
session each round), so the gateway parses, converts and estimates only the new ones.

``--variants`` repeats the concurrency-1 CPU figure with orjson parsing every body whole
(incremental reuse off) and/or uvicorn's httptools parser (each only if installed):
figures for a dependency proposal, not what the product ships.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import httpx

from common import ROOT, markdown_table

sys.path.insert(0, str(ROOT / "tests"))
from factories import long_session
from windowkeeper.gateway.client import Pool
from windowkeeper.testing import unused_port

UPSTREAM = """
import sys
from windowkeeper.testing.loopback import LoopbackUpstream, Reply
delay = float(sys.argv[1])
answer = Reply.delay(delay, Reply.turn("ok")) if delay else Reply.turn("ok")
with LoopbackUpstream(default=answer, record=False, fast=True) as server:
    print(server.port, flush=True)
    sys.stdin.read()
"""
GATEWAY = """
import sys
from windowkeeper.cli.serve import serve_command
if "orjson" in sys.argv[1:]:
    import orjson
    from windowkeeper.gateway import bodies
    bodies.loads = orjson.loads  # every body parsed whole, by orjson (no incremental reuse)
    bodies.BodyParser.__init__.__defaults__ = (0,)
import uvicorn
run = uvicorn.run
from windowkeeper.gateway.httpserver import LeanHTTP
parsers = {"httptools": "httptools", "h11": "h11"}
parser = next((parsers[f] for f in sys.argv[3:] if f in parsers), LeanHTTP)
uvicorn.run = lambda *a, **k: run(*a, **{**k, "http": parser})
serve_command(upstream=sys.argv[1], port=int(sys.argv[2]), context_length=10_000_000,
              log_level="warning")
"""


def body() -> bytes:
    messages = long_session(rounds=25, output_chars=8_600)[:100]
    return json.dumps({"model": "bench", "messages": messages}).encode()


@contextmanager
def process(code: str, *args: str) -> Iterator[subprocess.Popen[str]]:
    child = subprocess.Popen([sys.executable, "-c", code, *args], stdin=subprocess.PIPE,
                             stdout=subprocess.PIPE, text=True)  # fmt: skip
    try:
        yield child
    finally:
        child.terminate()
        child.wait(timeout=30)


def cpu_seconds(pid: int) -> float:
    with open(f"/proc/{pid}/stat") as stat:
        fields = stat.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def wait_up(url: str) -> None:
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        try:
            if httpx.get(url, timeout=1).status_code == 200:
                return
        except httpx.TransportError:
            time.sleep(0.1)
    raise SystemExit(f"{url} did not come up")


async def load(base: str, payload: bytes | list[bytes], clients: int, requests: int,
               session: str = "bench") -> list[float]:  # fmt: skip
    """Latencies (s) of ``requests`` POSTs from ``clients`` concurrent keep-alive clients
    (``payload``: one body, or the bodies each client sends in turn)."""
    pool = Pool(base, timeout=120, connect_timeout=10, max_idle=clients)
    samples: list[float] = []
    per_client = max(1, requests // clients)
    bodies = payload if isinstance(payload, list) else [payload]

    async def client(number: int) -> None:
        headers = [("content-type", "application/json"),
                   ("x-windowkeeper-session", f"{session}-{number}")]  # fmt: skip
        for turn in range(per_client):
            payload = bodies[turn % len(bodies)]
            started = time.perf_counter()
            response = await pool.request("POST", pool.path("/chat/completions"), headers, payload)
            await response.read()
            samples.append(time.perf_counter() - started)
            if response.status != 200:
                raise SystemExit(f"HTTP {response.status}")

    await asyncio.gather(*(client(n) for n in range(clients)))
    await pool.aclose()
    return samples


def pct(samples: list[float], q: float) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))] * 1000


def json_baseline(payload: bytes, repeat: int = 40) -> float:
    """CPU seconds of one json.loads plus one json.dumps of the body (one batch)."""
    started = time.process_time()
    for _ in range(repeat):
        json.dumps(json.loads(payload))
    return (time.process_time() - started) / repeat


ROUNDS = 8


def level(upstream: str, gateway_url: str, pid: int, payload: bytes, clients: int,
          requests: int) -> tuple[list[float], list[float], list[float], list[float]]:  # fmt: skip
    """``ROUNDS`` alternating batches direct / through the gateway (a shared machine drifts;
    alternating spreads the drift over both paths): latencies of both, the gateway's CPU
    per request of each round, and each round's json baseline."""
    batch = max(clients, requests // ROUNDS)
    asyncio.run(load(upstream, payload, clients, batch))  # warm-up
    asyncio.run(load(gateway_url, payload, clients, batch))
    direct: list[float] = []
    via: list[float] = []
    cpus, baselines = [], []
    for _ in range(ROUNDS):
        direct += asyncio.run(load(upstream, payload, clients, batch))
        before = cpu_seconds(pid)
        samples = asyncio.run(load(gateway_url, payload, clients, batch))
        cpus.append((cpu_seconds(pid) - before) / len(samples))
        baselines.append(json_baseline(payload))
        via += samples
    return direct, via, cpus, baselines


def measure(upstream: str, payload: bytes, requests: int, flags: tuple[str, ...],
            levels: tuple[int, ...]) -> tuple[list[list[Any]], float]:  # fmt: skip
    """Table rows per level and the first level's gateway CPU ÷ json.loads+dumps (the
    median over rounds of the per-round ratio)."""
    port = unused_port()
    rows = []
    ratio = 0.0
    with process(GATEWAY, upstream, str(port), *flags) as gateway:
        wait_up(f"http://127.0.0.1:{port}/healthz")
        for clients in levels:
            direct, via, cpus, baselines = level(
                upstream, f"http://127.0.0.1:{port}/v1", gateway.pid, payload, clients, requests
            )
            if not ratio:
                ratio = statistics.median(c / b for c, b in zip(cpus, baselines, strict=True))
            rows.append([clients, len(via), f"{pct(direct, .5):.2f}", f"{pct(via, .5):.2f}",
                         f"{pct(via, .5) - pct(direct, .5):+.2f}", f"{pct(direct, .99):.2f}",
                         f"{pct(via, .99):.2f}", f"{pct(via, .99) - pct(direct, .99):+.2f}",
                         f"{statistics.median(cpus) * 1000:.2f}"])  # fmt: skip
    return rows, ratio


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=640)
    parser.add_argument("--variants", action="store_true")
    parser.add_argument("--model-latency", type=float, default=0.0,
                        help="seconds the upstream waits before each answer (a model)")  # fmt: skip
    parser.add_argument("--http", choices=("lean", "h11", "httptools"), default="lean",
                        help="the gateway's HTTP/1.1 (lean: windowkeeper's own)")  # fmt: skip
    parser.add_argument("--growing", action="store_true",
                        help="also: one client whose history grows each request")  # fmt: skip
    args = parser.parse_args()
    payload = body()
    baseline = statistics.median(json_baseline(payload) for _ in range(5))
    with process(UPSTREAM, str(args.model_latency)) as upstream:
        assert upstream.stdout is not None
        upstream_url = f"http://127.0.0.1:{upstream.stdout.readline().strip()}/v1"
        rows, ratio = measure(upstream_url, payload, args.requests, (args.http,), (1, 16, 64))
        header = ["clients", "requests", "direct p50 ms", "gateway p50 ms", "added p50",
                  "direct p99 ms", "gateway p99 ms", "added p99", "gateway CPU ms/req"]  # fmt: skip
        print(f"body: {len(payload) / 1024:.0f} KiB, 100 messages; upstream latency "
              f"{args.model_latency * 1000:.0f} ms; json.loads+json.dumps {baseline * 1000:.2f} "
              f"ms; gateway CPU per request / that = {ratio:.2f}x\n")  # fmt: skip
        print(markdown_table(header, rows))
        if args.variants:
            print()
            print(variants(upstream_url, payload, args.requests // 2))
        if args.growing:
            print()
            print(growing(upstream_url))


def growing(upstream: str, turns: int = 200, rounds: int = 3) -> str:
    """One client whose history grows by a reply and a follow-up per request, as an
    agent's does (a new session each round): added latency and the gateway's CPU per
    request against json.loads + json.dumps of the same bodies."""
    base = long_session(rounds=25, output_chars=8_600)[:100]
    extra = [m for n in range(turns) for m in (
        {"role": "assistant", "content": f"Turn {n}: the output looks fine, next step."},
        {"role": "user", "content": f"Go on with turn {n + 1}."})]  # fmt: skip
    bodies = [json.dumps({"model": "bench", "messages": base + extra[: 2 * k]}).encode()
              for k in range(turns)]  # fmt: skip
    port = unused_port()
    direct: list[float] = []
    via: list[float] = []
    cpus, floors = [], []
    with process(GATEWAY, upstream, str(port)) as gateway:
        wait_up(f"http://127.0.0.1:{port}/healthz")
        asyncio.run(load(f"http://127.0.0.1:{port}/v1", bodies[:20], 1, 20, "warm"))
        for number in range(rounds):
            direct += asyncio.run(load(upstream, bodies, 1, turns))
            before = cpu_seconds(gateway.pid)
            via += asyncio.run(load(f"http://127.0.0.1:{port}/v1", bodies, 1, turns,
                                    f"grow{number}"))  # fmt: skip
            cpus.append((cpu_seconds(gateway.pid) - before) / turns)
            floors.append(statistics.mean(json_baseline(b, repeat=2) for b in bodies[::10]))
    cpu, floor = statistics.median(cpus), statistics.median(floors)
    header = ["requests", "body KiB", "direct p50 ms", "gateway p50 ms", "added p50",
              "gateway CPU ms/req", "CPU ÷ loads+dumps"]  # fmt: skip
    row = [len(via), f"{len(bodies[0]) / 1024:.0f}–{len(bodies[-1]) / 1024:.0f}",
           f"{pct(direct, .5):.2f}", f"{pct(via, .5):.2f}",
           f"{pct(via, .5) - pct(direct, .5):+.2f}", f"{cpu * 1000:.2f}",
           f"{cpu / floor:.2f}x"]  # fmt: skip
    return markdown_table(header, [row])


def variants(upstream: str, payload: bytes, requests: int) -> str:
    """The concurrency-1 figures with orjson and/or httptools patched in (when installed)."""
    chosen: list[tuple[str, tuple[str, ...]]] = [("stdlib json, lean", ()), ("h11", ("h11",))]
    for flags in (("orjson",), ("httptools",), ("orjson", "httptools")):
        try:
            for name in flags:
                __import__(name)
        except ImportError:
            continue
        chosen.append((" + ".join(flags), flags))
    table = []
    for name, flags in chosen:
        cells, ratio = measure(upstream, payload, requests, flags, (1,))
        table.append([name, cells[0][8], cells[0][4], f"{ratio:.2f}x"])
    return markdown_table(["gateway variant", "CPU ms/req", "added p50 ms", "CPU ÷ loads+dumps"],
                          table)  # fmt: skip


if __name__ == "__main__":
    main()
