"""Clients other than the Python SDKs on the gateway's own HTTP/1.1 layer: Node's fetch
(undici: Claude Code's HTTP stack) with a 300 KB Messages request, a streamed answer
(chunked) and a streamed request body (chunked upload); curl with a 2 MB body (it asks
``Expect: 100-continue``) and HTTP/1.0. Each skipped where the program is missing."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest
from serving import loopback_settings, serving

from windowkeeper.testing.loopback import LoopbackUpstream, Reply

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


@pytest.mark.skipif(shutil.which("node") is None, reason="needs Node.js")
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


@pytest.mark.skipif(shutil.which("curl") is None, reason="needs curl")
def test_curl_waits_for_100_continue_and_speaks_http_1_0(tmp_path: Path) -> None:
    body = tmp_path / "big.json"
    big = {"model": "test-model", "messages": [{"role": "user", "content": "x" * 2_000_000}]}
    body.write_text(json.dumps(big))
    with (
        LoopbackUpstream(default=Reply.turn("ok")) as upstream,
        serving(loopback_settings(upstream)) as base,
    ):
        sent = subprocess.run(
            ["curl", "-sv", "-H", "content-type: application/json", "--data-binary",
             f"@{body}", f"{base}/v1/chat/completions"],
            capture_output=True, text=True, timeout=60, check=True,
        )  # fmt: skip
        old = subprocess.run(["curl", "-s", "--http1.0", f"{base}/healthz"],
                             capture_output=True, text=True, timeout=60, check=True)  # fmt: skip
    assert "< HTTP/1.1 100 Continue" in sent.stderr and "< HTTP/1.1 200 OK" in sent.stderr
    assert json.loads(sent.stdout)["choices"][0]["message"]["content"] == "ok"
    assert json.loads(old.stdout)["status"] == "ok"
