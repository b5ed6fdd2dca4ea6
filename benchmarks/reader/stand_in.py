"""A stand-in summary model for the LLM variants (L, L+) of the reader benchmark.

The LLM variants need a model that writes the handoff's notes from windowkeeper's own
summary prompt. Where no model endpoint is reachable, a fresh model instance can play that
part by hand: this loopback server speaks the OpenAI chat-completions API to
``windowkeeper compress --summarizer llm`` and answers each request from a reply file that
a model wrote after reading that request alone.

The directory it serves (``DIR``):

- ``prompts/<key>.md``: written for every request that has no reply yet — the request's
  messages, exactly as sent, with instructions for the model that answers it. ``<key>`` is
  a hash of the request's messages, so the same compaction asks the same key again.
- ``replies/<key>.md``: the answering model's reply, returned verbatim as the assistant
  message of that request.

A request without a reply is answered 503 (the summarizer then falls back to the
extractive handoff, which the builder refuses to pass off as an L variant: see
``pending``). Run the builder with ``--summary-prompts DIR`` until nothing is pending,
have one fresh model instance answer each prompt, then build the run with ``--stand-in
DIR`` (README, "The LLM variants without an endpoint").
"""

from __future__ import annotations

import hashlib
import json
import threading
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from readerlib import render_template

MODEL = "stand-in-summary-model"


def request_key(messages: Sequence[Mapping[str, Any]]) -> str:
    """The reply file's key: a hash of the request's messages (model and options aside)."""
    canonical = json.dumps(list(messages), sort_keys=True, ensure_ascii=False)
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()[:16]


def prompt_page(key: str, messages: Sequence[Mapping[str, Any]]) -> str:
    """What the answering model reads: the request's messages and how to reply."""
    blocks = []
    for message in messages:
        content = message.get("content")
        if isinstance(content, list):
            content = "\n".join(
                str(part.get("text", "")) for part in content if isinstance(part, dict)
            )
        blocks.append(f"### {str(message.get('role', '?')).upper()}\n\n{content}")
    return render_template("summary_model.md", {"key": key, "messages": "\n\n".join(blocks)})


class StandIn:
    """The reply directory and what this process asked of it."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.pending: set[str] = set()  # keys asked in this process without a reply
        self.answered: set[str] = set()
        self._lock = threading.Lock()
        (folder / "prompts").mkdir(parents=True, exist_ok=True)
        (folder / "replies").mkdir(parents=True, exist_ok=True)

    def reply_to(self, body: Mapping[str, Any]) -> str | None:
        """The stored reply to ``body``, or ``None`` after writing its prompt page."""
        messages = body.get("messages")
        if not isinstance(messages, list):
            raise ValueError("the request has no messages list")
        key = request_key(messages)
        reply = self.folder / "replies" / f"{key}.md"
        with self._lock:
            if reply.exists():
                self.answered.add(key)
                return reply.read_text(encoding="utf-8")
            self.pending.add(key)
            page = self.folder / "prompts" / f"{key}.md"
            page.write_text(prompt_page(key, messages), encoding="utf-8")
            return None


def completion(content: str, model: str) -> dict[str, Any]:
    return {
        "id": "chatcmpl-stand-in",
        "object": "chat.completion",
        "created": 0,
        "model": model,
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": content},
                "finish_reason": "stop",
            }
        ],
        "usage": {"prompt_tokens": 0, "completion_tokens": 0, "total_tokens": 0},
    }


def handler_for(stand_in: StandIn) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, format: str, *args: Any) -> None:
            """Quiet: the builder prints what matters."""

        def _send(self, status: int, payload: Mapping[str, Any]) -> None:
            data = json.dumps(payload).encode("utf-8")
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def do_GET(self) -> None:
            if self.path.rstrip("/").endswith("/models"):
                self._send(200, {"object": "list", "data": [{"id": MODEL, "object": "model"}]})
            else:
                self._send(404, {"error": {"message": f"no route {self.path}"}})

        def do_POST(self) -> None:
            if not self.path.rstrip("/").endswith("/chat/completions"):
                self._send(404, {"error": {"message": f"no route {self.path}"}})
                return
            length = int(self.headers.get("Content-Length") or 0)
            try:
                body = json.loads(self.rfile.read(length) or b"{}")
                reply = stand_in.reply_to(body)
            except ValueError as exc:
                self._send(400, {"error": {"message": str(exc), "type": "invalid_request"}})
                return
            if reply is None:
                message = "no reply yet: a model must answer this prompt (stand-in)"
                self._send(503, {"error": {"message": message, "type": "unavailable"}})
                return
            self._send(200, completion(reply, str(body.get("model") or MODEL)))

    return Handler


@contextmanager
def serving(folder: Path) -> Iterator[tuple[StandIn, str]]:
    """Serve ``folder`` on a free loopback port; yields the stand-in and its base URL."""
    stand_in = StandIn(folder)
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler_for(stand_in))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield stand_in, f"http://127.0.0.1:{server.server_address[1]}/v1"
    finally:
        server.shutdown()
        server.server_close()
        thread.join()
