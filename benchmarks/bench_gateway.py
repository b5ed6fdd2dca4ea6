"""Latency the gateway adds per request, over real HTTP on loopback.

Run: ``.venv/bin/python benchmarks/bench_gateway.py [--requests N]``.

The upstream is windowkeeper's scripted OpenAI-compatible test server; the gateway runs
under uvicorn on 127.0.0.1 in a background thread. For each history the same request is
sent ``N`` times directly to the upstream and ``N`` times through the gateway (one pooled
httpx client each, after warm-up); the table shows medians and the difference:

* small: a system prompt and one user message;
* 2,000 messages: a tool-using session below the trigger (digest, estimate, forward);
* 2,000 messages, compacted: the same session over the trigger; the first request
  compacts, every measured one substitutes the stored prefix (the upstream receives the
  short list, so this row can be faster than the direct call).
"""

from __future__ import annotations

import argparse
import json
import socket
import statistics
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import httpx
import uvicorn

from common import ROOT, markdown_table

sys.path.insert(0, str(ROOT / "tests"))
from factories import long_session, system, user
from windowkeeper.core.tokens import estimate_messages_tokens
from windowkeeper.gateway import GatewaySettings, create_app
from windowkeeper.testing import OpenAITestServer, Step


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@contextmanager
def running_gateway(settings: GatewaySettings) -> Iterator[str]:
    port = free_port()
    config = uvicorn.Config(
        create_app(settings), host="127.0.0.1", port=port, log_level="warning", lifespan="on"
    )
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    while not server.started:
        time.sleep(0.01)
    try:
        yield f"http://127.0.0.1:{port}/v1"
    finally:
        server.should_exit = True
        thread.join(timeout=10)


def median_ms(client: httpx.Client, url: str, body: dict[str, Any], requests: int) -> float:
    payload = json.dumps(body).encode()
    headers = {"Content-Type": "application/json", "X-Windowkeeper-Session": "bench"}
    samples = []
    for _ in range(requests):
        started = time.perf_counter()
        response = client.post(url + "/chat/completions", content=payload, headers=headers)
        samples.append(time.perf_counter() - started)
        response.raise_for_status()
    return statistics.median(samples) * 1000


def measure(name: str, messages: list[dict[str, Any]], window: int, requests: int) -> list[Any]:
    body = {"model": "bench", "messages": messages}
    with OpenAITestServer() as upstream:
        upstream.script(*[Step.completion("ok") for _ in range(2 * requests + 10)])
        settings = GatewaySettings(
            upstream_base_url=upstream.base_url, context_lengths={"bench": window}
        )
        with running_gateway(settings) as gateway_url, httpx.Client(timeout=30) as client:
            median_ms(client, upstream.base_url, body, 3)  # warm-up
            direct = median_ms(client, upstream.base_url, body, requests)
            median_ms(client, gateway_url, body, 3)  # warm-up (and the one compaction)
            via = median_ms(client, gateway_url, body, requests)
            sent = len(upstream.chat_requests[-1].body["messages"])
    size = len(json.dumps(body)) // 1024
    return [name, len(messages), f"{size} KiB", sent, f"{direct:.2f}", f"{via:.2f}",
            f"{via - direct:+.2f}"]  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=200)
    args = parser.parse_args()
    small = [system(), user("Say hello.")]
    session = long_session(rounds=500, output_chars=300)[:2000]
    session.append(user("What changed?"))
    tokens = estimate_messages_tokens(session)
    rows = [
        measure("small", small, 128_000, args.requests),
        measure("2,000 messages", session, tokens * 10, args.requests),
        measure("2,000 messages, compacted", session, int(tokens / 0.9), args.requests),
    ]
    header = ["history", "messages", "body", "upstream got", "direct ms", "gateway ms", "added"]
    print(markdown_table(header, rows))


if __name__ == "__main__":
    main()
