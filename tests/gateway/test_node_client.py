"""Node's fetch (undici: Claude Code's HTTP stack) as the client of the gateway's own
HTTP/1.1 layer: a 300 KB Messages request, a streamed answer (chunked) and a streamed
request body (chunked upload). Skipped where Node is not installed."""

from __future__ import annotations

import shutil
import subprocess

import pytest
from serving import loopback_settings, serving

from windowkeeper.testing.loopback import LoopbackUpstream, Reply

pytestmark = pytest.mark.skipif(shutil.which("node") is None, reason="needs Node.js")

SCRIPT = r"""
const base = process.argv[1];
const headers = {"content-type": "application/json", "x-api-key": "k",
                 "anthropic-version": "2023-06-01"};
const long = JSON.stringify({model: "test-model", max_tokens: 50,
                             messages: [{role: "user", content: "x".repeat(300000)}]});
const post = (body, extra = {}) =>
  fetch(base + "/v1/messages", {method: "POST", headers, body, ...extra});
async function main() {
  const plain = await post(long);
  console.log("plain", plain.status, (await plain.json()).content[0].text);
  const short = {model: "test-model", max_tokens: 50, stream: true,
                 messages: [{role: "user", content: "hi"}]};
  const streamed = await post(JSON.stringify(short));
  const events = (await streamed.text()).split("\n").filter(l => l.startsWith("event:"));
  console.log("stream", streamed.status, streamed.headers.get("transfer-encoding"), events.at(-1));
  const enc = new TextEncoder();
  const body = new ReadableStream({start(c) {
    c.enqueue(enc.encode(long.slice(0, 1000))); c.enqueue(enc.encode(long.slice(1000))); c.close();
  }});
  const upload = await post(body, {duplex: "half"});
  console.log("upload", upload.status, (await upload.json()).content[0].text);
}
main().catch(e => { console.error(e); process.exit(1); });
"""


def test_node_fetch_through_the_gateway() -> None:
    with (
        LoopbackUpstream(default=Reply.turn("ok")) as upstream,
        serving(loopback_settings(upstream)) as base,
    ):
        done = subprocess.run(["node", "-e", SCRIPT, base], capture_output=True, text=True,
                              timeout=60, check=False)  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == [
        "plain 200 ok", "stream 200 chunked event: message_stop", "upload 200 ok"
    ]  # fmt: skip
