"""Instructions per gateway request under callgrind: a fresh body, a compacting request.

Run: ``.venv/bin/python benchmarks/gateway_instructions.py [--modes fresh,chat,messages]
[--against DIR] [--requests N]``.

The HTTP benchmarks (``bench_gateway.py --fresh-only``, ``bench_gateway_compact.py``) read
CPU time in 10 ms clock ticks on a shared machine, where a few per cent are lost in the
load of the neighbours; instruction counts repeat to ~0.1%. Each run is one process
driving ``Gateway.handle`` directly (as ``windowkeeper serve`` sets it up, the collector
included; no HTTP server in front, the gateway's own upstream client and the loopback
upstream, in a process of its own, behind) under ``valgrind --tool=callgrind``, once
with 10 requests and once with ``10 + N``: the difference ÷ N is what a request costs,
start-up and warm-up left out. Modes: ``fresh`` (``bench_gateway.py --fresh``'s 98 KiB
Chat bodies below the threshold, each a new session), ``chat`` / ``messages``
(``bench_gateway_compact.py``'s ~27K-token histories at a 16K window, each compacted).
``--against DIR`` measures that checkout's gateway (``DIR/src``) the same way; the last
column is this ÷ that. Needs valgrind (skipped without it); ~1 minute a run, longer
under load (the counts do not change with it).
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile

from common import ROOT, markdown_table

DRIVER = """
import asyncio, os, subprocess, sys
sys.path[:0] = [os.path.join(sys.argv[1], "benchmarks"), os.path.join(sys.argv[1], "tests")]
from bench_gateway import UPSTREAM, fresh_bodies
from bench_gateway_compact import bodies
from windowkeeper.gateway import create_app
from windowkeeper.gateway.auth import Caller
from windowkeeper.gateway.collector import Collector
from windowkeeper.gateway.protocols import CHAT, MESSAGES
from windowkeeper.gateway.settings import gateway_settings

mode, count, most = sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
# As many bodies made in every run (what making them costs is the same in both runs).
if mode == "fresh":
    protocol, window, made = CHAT, 10_000_000, fresh_bodies(most, "run")
else:
    protocol = CHAT if mode == "chat" else MESSAGES
    window, made = 16_000, bodies(mode, most, "run")

async def main(url):
    settings = gateway_settings(url + "/v1", context_length=window, anthropic_upstream=url)
    gateway = create_app(settings).gateway
    gateway.collector = Collector()  # as windowkeeper serve sets it
    headers = {"content-type": "application/json"}
    for raw in made[:count]:
        answer = await gateway.handle(protocol, raw, headers, Caller("bench"))
        assert answer.status == 200, answer.body[:300]
    await gateway.aclose()

upstream = subprocess.Popen([sys.executable, "-c", UPSTREAM, "0"], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, text=True)
try:
    asyncio.run(main(f"http://127.0.0.1:{upstream.stdout.readline().strip()}"))
finally:
    upstream.terminate()
    upstream.wait()
"""
MODES = ("fresh", "chat", "messages")
WARM = 10


def instructions(src: str, mode: str, count: int, most: int) -> int:
    """Instructions of one driver run of ``count`` requests, ``most`` bodies made (the
    driver's process only: the upstream runs in a child valgrind does not follow)."""
    with tempfile.TemporaryDirectory() as scratch:
        out = os.path.join(scratch, "callgrind.out")
        env = {**os.environ, "PYTHONPATH": src, "PYTHONHASHSEED": "0"}
        driver = [sys.executable, "-c", DRIVER, str(ROOT), mode, str(count), str(most)]
        command = ["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}", *driver]
        subprocess.run(command, env=env, check=True, capture_output=True)
        with open(out) as profile:
            found = re.search(r"^summary: (\d+)", profile.read(), re.MULTILINE)
    if found is None:
        raise SystemExit(f"no instruction total in callgrind's output for {src} {mode}")
    return int(found.group(1))


def per_request(src: str, mode: str, count: int) -> float:
    most = WARM + count
    return (instructions(src, mode, most, most) - instructions(src, mode, WARM, most)) / count


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--modes", default=",".join(MODES))
    parser.add_argument("--against", help="another checkout, measured the same way")
    parser.add_argument("--requests", type=int, default=20)
    args = parser.parse_args()
    if shutil.which("valgrind") is None:
        print("valgrind is not installed: nothing measured")
        return
    checkouts = [("this", str(ROOT / "src"))]
    if args.against:
        checkouts.append(("other", os.path.join(args.against, "src")))
    rows = []
    for mode in args.modes.split(","):
        counts = [per_request(src, mode, args.requests) for _, src in checkouts]
        ratio = f"{counts[0] / counts[1]:.3f}" if len(counts) > 1 else "—"
        rows.append([mode, *(f"{c / 1e6:.3f}" for c in counts), ratio])
    header = ["request", *(f"{name}: M instructions" for name, _ in checkouts), "this ÷ other"]
    print(markdown_table(header, rows))


if __name__ == "__main__":
    main()
