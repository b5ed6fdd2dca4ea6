"""Gateway overhead: added latency and CPU per request, over real HTTP on loopback.

Run: ``.venv/bin/python benchmarks/bench_gateway.py [--requests N] [--variants]
[--model-latency S] [--growing] [--fresh | --fresh-only --rounds N] [--clients]
[--against DIR --repeat N]``.

Three processes: the loopback upstream (answers at once), the gateway (``windowkeeper
serve`` under uvicorn with httptools) and this load generator (httpx keep-alive clients;
the client's cost is in both the direct and the gateway figures, the gateway's CPU is read
from its own process). Every request is the same 100-message, ~220 KiB
chat history that needs no compaction (the window is far larger), one session per client.
For 1, 16 and 64 concurrent clients the same number of requests goes to the upstream
directly and through the gateway; the table shows p50 / p99 latency of both and the
difference. The gateway's CPU per request (user + system time of its process, from
/proc, over the concurrency-1 run) is divided by what one ``json.loads`` plus one
``json.dumps`` of the body costs in this process.

``--growing`` adds one client whose history grows by two messages per request (a new
session each round), so the gateway parses, converts and estimates only the new ones.

``--fresh``: one client, every body a 98 KiB history the gateway has never seen (a new
session each): the CPU of a fresh body ÷ its loads+dumps (with ``--against``, both
gateways alternated round by round, and this one's CPU ÷ the other's per round);
``--fresh-only`` runs that table alone, over ``--rounds`` rounds.

``--clients``: the upstream client alone, in this process: CPU per forwarded request of
httpx and of aiohttp (if installed) against the same upstream, ÷ the body's loads+dumps.

``--against DIR``: the same levels alternated with the gateway of another checkout
(``DIR/src`` first on its path, e.g. ``git worktree add /tmp/old COMMIT``), ``--repeat``
times each; that one runs with ``--http lean`` on the asyncio loop if it has its own
HTTP/1.1 server. The table shows the median of each cell over the repeats.

``--variants`` repeats the concurrency-1 CPU figure with orjson parsing every body whole
(incremental reuse off), with h11, and on the asyncio loop instead of uvloop.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
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
http = next((f for f in sys.argv[3:] if f in ("lean", "h11", "httptools")), "httptools")
loop = "asyncio" if "asyncio" in sys.argv[3:] else "auto"
uvicorn.run = lambda *a, **k: run(*a, **{**k, "loop": loop})
serve_command(upstream=sys.argv[1], port=int(sys.argv[2]), context_length=10_000_000,
              log_level="warning", http=http)
"""


def body() -> bytes:
    messages = long_session(rounds=25, output_chars=8_600)[:100]
    return json.dumps({"model": "bench", "messages": messages}).encode()


@contextmanager
def process(code: str, *args: str, src: str | None = None) -> Iterator[subprocess.Popen[str]]:
    """A child Python running ``code`` (with ``src`` first on its path when given)."""
    env = {**os.environ, "PYTHONPATH": src} if src else None
    child = subprocess.Popen([sys.executable, "-c", code, *args], stdin=subprocess.PIPE,
                             stdout=subprocess.PIPE, text=True, env=env)  # fmt: skip
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
    samples: list[float] = []
    per_client = max(1, requests // clients)
    bodies = payload if isinstance(payload, list) else [payload]
    limits = httpx.Limits(max_keepalive_connections=clients)

    async def client(number: int, http: httpx.AsyncClient) -> None:
        headers = {"content-type": "application/json"}
        if session:  # else the gateway keys the session by the history's first texts
            headers["x-windowkeeper-session"] = f"{session}-{number}"
        for turn in range(per_client):
            payload = bodies[turn % len(bodies)]
            started = time.perf_counter()
            response = await http.post(base + "/chat/completions", content=payload,
                                       headers=headers)  # fmt: skip
            samples.append(time.perf_counter() - started)
            if response.status_code != 200:
                raise SystemExit(f"HTTP {response.status_code}: {response.text[:300]}")

    async with httpx.AsyncClient(timeout=120, limits=limits, trust_env=False) as http:
        await asyncio.gather(*(client(n, http) for n in range(clients)))
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
            levels: tuple[int, ...], src: str | None = None,
            ) -> tuple[list[list[Any]], float]:  # fmt: skip
    """Table rows per level and the first level's gateway CPU ÷ json.loads+dumps (the
    median over rounds of the per-round ratio)."""
    port = unused_port()
    rows = []
    ratio = 0.0
    with process(GATEWAY, upstream, str(port), *flags, src=src) as gateway:
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


HEADER = ["clients", "requests", "direct p50 ms", "gateway p50 ms", "added p50",
          "direct p99 ms", "gateway p99 ms", "added p99", "gateway CPU ms/req"]  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=640)
    parser.add_argument("--variants", action="store_true")
    parser.add_argument("--model-latency", type=float, default=0.0,
                        help="seconds the upstream waits before each answer (a model)")  # fmt: skip
    parser.add_argument("--http", choices=("httptools", "h11"), default="httptools")
    parser.add_argument("--growing", action="store_true",
                        help="also: one client whose history grows each request")  # fmt: skip
    parser.add_argument("--fresh", action="store_true", help="also: never-seen 98 KiB bodies")
    parser.add_argument("--fresh-only", action="store_true", help="only the --fresh table")
    parser.add_argument("--rounds", type=int, default=ROUNDS, help="--fresh: alternated rounds")
    parser.add_argument("--clients", action="store_true", help="also: httpx vs aiohttp alone")
    parser.add_argument("--against", help="a checkout whose gateway to alternate with")
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    payload = body()
    baseline = statistics.median(json_baseline(payload) for _ in range(5))
    with process(UPSTREAM, str(args.model_latency)) as upstream:
        assert upstream.stdout is not None
        upstream_url = f"http://127.0.0.1:{upstream.stdout.readline().strip()}/v1"
        print(f"body: {len(payload) / 1024:.0f} KiB, 100 messages; upstream latency "
              f"{args.model_latency * 1000:.0f} ms; json.loads+json.dumps {baseline * 1000:.2f} "
              "ms\n")  # fmt: skip
        if args.fresh_only:
            pass
        elif args.against:
            print(against(upstream_url, payload, args.requests, args.http, args))
        else:
            rows, ratio = measure(upstream_url, payload, args.requests, (args.http,), (1, 16, 64))
            print(f"gateway CPU per request / loads+dumps = {ratio:.2f}x\n")
            print(markdown_table(HEADER, rows))
        for wanted, table in ((args.variants, variants), (args.growing, growing),
                              (args.clients, client_costs)):  # fmt: skip
            if wanted:
                print()
                print(table(upstream_url, payload, args.requests // 2))
        if args.fresh or args.fresh_only:
            print()
            print(fresh(upstream_url, payload, args.requests // 2, args.against, args.rounds))


def against(upstream: str, payload: bytes, requests: int, http: str,
            args: argparse.Namespace) -> str:  # fmt: skip
    """This checkout's gateway and the one in ``args.against``, alternated ``args.repeat``
    times: per level, the median of each cell over the repeats, and the CPU ratios."""
    old_src = os.path.join(args.against, "src")
    lean = os.path.exists(os.path.join(old_src, "windowkeeper/gateway/httpserver.py"))
    old_flags = ("lean", "asyncio") if lean else (http,)
    runs: dict[str, list[tuple[list[list[Any]], float]]] = {"this": [], "other": []}
    for _ in range(args.repeat):
        runs["this"].append(measure(upstream, payload, requests, (http,), (1, 16)))
        runs["other"].append(measure(upstream, payload, requests, old_flags, (1, 16), old_src))
    table = []
    for name, results in runs.items():
        for index in range(2):
            cells = [r[0][index] for r in results]
            row = [f"{statistics.median(float(c[k]) for c in cells):.2f}" for k in range(9)]
            ratios = " ".join(f"{r[1]:.2f}" for r in results)
            added = " ".join(str(c[4]) for c in cells)
            table.append([name, *row, added, ratios if index == 0 else ""])
    return markdown_table(["gateway", *HEADER, "added p50 per run", "CPU ÷ loads+dumps per run"],
                          table)  # fmt: skip


def fresh_bodies(count: int, tag: str = "run") -> list[bytes]:
    """``count`` 98 KiB Chat histories (44 messages) that differ in their first message
    (``(tag n)`` appended): each one a session the gateway has never seen."""
    base = long_session(rounds=25, output_chars=8_600)[:44]
    bodies = []
    for n in range(count):
        history = [{**base[0], "content": f"{base[0]['content']} ({tag} {n})"}, *base[1:]]
        bodies.append(json.dumps({"model": "bench", "messages": history}).encode())
    return bodies


def fresh(upstream: str, _payload: bytes, requests: int, against: str | None = None,
          rounds: int = ROUNDS) -> str:  # fmt: skip
    """One client, each body a 98 KiB history never seen before (its first message differs,
    a new session each): the gateway's CPU per request ÷ that body's loads+dumps. With
    ``against``, that checkout's gateway runs too, the two alternated round by round, and
    the last column is the median over rounds of this gateway's CPU ÷ the other's (the
    pair ran back to back, so a drift of the machine's load cancels out)."""
    count = max(20, requests // 4)
    bodies = fresh_bodies(count)
    gateways = [("this", None)] + ([("other", os.path.join(against, "src"))] if against else [])
    cpus: dict[str, list[float]] = {name: [] for name, _ in gateways}
    ratios: dict[str, list[float]] = {name: [] for name, _ in gateways}
    added: dict[str, list[float]] = {name: [] for name, _ in gateways}
    with contextlib.ExitStack() as stack:
        running = []
        for name, src in gateways:
            port = unused_port()
            gateway = stack.enter_context(process(GATEWAY, upstream, str(port), src=src))
            wait_up(f"http://127.0.0.1:{port}/healthz")
            url = f"http://127.0.0.1:{port}/v1"
            asyncio.run(load(url, bodies[:5], 1, 5, "fresh-warm"))
            running.append((name, url, gateway.pid))
        for number in range(rounds):
            for name, url, pid in running:
                tag = f"({name[0]}{number} run ".encode()
                round_bodies = [b.replace(b"(run ", tag, 1) for b in bodies]
                direct = asyncio.run(load(upstream, round_bodies, 1, count))
                before = cpu_seconds(pid)
                via = asyncio.run(load(url, round_bodies, 1, count, ""))  # each its own session
                cpus[name].append((cpu_seconds(pid) - before) / count)
                ratios[name].append(cpus[name][-1] / json_baseline(round_bodies[0]))
                added[name].append(pct(via, 0.5) - pct(direct, 0.5))
    size = len(bodies[0]) / 1024
    rows = []
    for name, _ in gateways:
        paired = [c / o for c, o in zip(cpus[name], cpus["other"], strict=True)] if against else []
        rows.append([name, f"{size:.0f}", count * rounds, f"{statistics.median(added[name]):+.2f}",
                     f"{statistics.median(cpus[name]) * 1000:.2f}",
                     f"{statistics.median(ratios[name]):.2f}x "
                     f"({min(ratios[name]):.2f}–{max(ratios[name]):.2f})",
                     f"{statistics.median(paired):.3f}" if paired else "—"])  # fmt: skip
    header = ["gateway", "fresh body KiB", "requests", "added p50 ms (median of rounds)",
              "CPU ms/req", "CPU ÷ loads+dumps (min–max)", "CPU ÷ other's, paired"]  # fmt: skip
    return markdown_table(header, rows)


def client_costs(upstream: str, payload: bytes, requests: int) -> str:
    """The upstream client alone: CPU of this process per POST of the body to the upstream
    and read of its answer, httpx and aiohttp alternated over ``ROUNDS``."""
    clients = {"httpx": _httpx_posts}
    try:
        import aiohttp  # noqa: F401  (a candidate measured here, not a dependency)

        clients["aiohttp"] = _aiohttp_posts
    except ImportError:
        pass
    cpu: dict[str, list[float]] = {name: [] for name in clients}
    for _ in range(ROUNDS):
        for name, posts in clients.items():
            spent = asyncio.run(posts(upstream + "/chat/completions", payload, requests // ROUNDS))
            cpu[name].append(spent / (requests // ROUNDS))
    floor = json_baseline(payload)
    rows = [[name, f"{statistics.median(v) * 1000:.3f}", f"{statistics.median(v) / floor:.2f}x"]
            for name, v in cpu.items()]  # fmt: skip
    return markdown_table(["upstream client", "CPU ms/request", "÷ loads+dumps"], rows)


async def _httpx_posts(url: str, payload: bytes, count: int) -> float:
    """CPU seconds of ``count`` requests on one warm client (its creation left out)."""
    headers = {"content-type": "application/json", "accept-encoding": "identity"}
    async with httpx.AsyncClient(trust_env=False, headers=headers) as client:
        await client.post(url, content=payload)
        started = time.process_time()
        for _ in range(count):
            async with client.stream("POST", url, content=payload) as response:
                b"".join([chunk async for chunk in response.aiter_raw()])
        return time.process_time() - started


async def _aiohttp_posts(url: str, payload: bytes, count: int) -> float:
    """As :func:`_httpx_posts`, with aiohttp."""
    import aiohttp

    headers = {"content-type": "application/json", "accept-encoding": "identity"}
    async with aiohttp.ClientSession(headers=headers, auto_decompress=False) as session:
        async with session.post(url, data=payload) as response:
            await response.read()
        started = time.process_time()
        for _ in range(count):
            async with session.post(url, data=payload) as response:
                await response.read()
        return time.process_time() - started


def growing(upstream: str, _payload: bytes, _requests: int, turns: int = 200,
            rounds: int = 3) -> str:  # fmt: skip
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
    """The concurrency-1 figures with orjson, with h11 and on the asyncio loop."""
    chosen: list[tuple[str, tuple[str, ...]]] = [
        ("httptools, uvloop if installed", ()), ("h11", ("h11",)), ("asyncio loop", ("asyncio",))
    ]  # fmt: skip
    try:
        __import__("orjson")
        chosen.append(("orjson", ("orjson",)))
    except ImportError:
        pass
    table = []
    for name, flags in chosen:
        cells, ratio = measure(upstream, payload, requests, flags, (1,))
        table.append([name, cells[0][8], cells[0][4], f"{ratio:.2f}x"])
    return markdown_table(["gateway variant", "CPU ms/req", "added p50 ms", "CPU ÷ loads+dumps"],
                          table)  # fmt: skip


if __name__ == "__main__":
    main()
