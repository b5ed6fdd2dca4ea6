"""Test helpers shipped with windowkeeper: a scripted OpenAI-compatible server and a fake.

``OpenAITestServer`` is a real HTTP server on ``127.0.0.1`` (random port) in a background
thread, so tests exercise the real openai SDK and transport instead of mocks::

    with OpenAITestServer() as server:
        server.script(Step.completion("## Goal\\n..."), Step.error(401))
        config = LLMSummarizerConfig(model="m", base_url=server.base_url, timeout=0.5)
        ...
        assert server.requests[0].body["model"] == "m"

What holds: every chat request consumes exactly one scripted step (an empty script
answers 500, so nothing loops); delays wake up when the server stops; responses close
the connection (HTTP/1.0), so no handler thread outlives ``__exit__`` and no socket is
left for the garbage collector (tests run with warnings as errors).
"""

from __future__ import annotations

import json
import socket
import threading
from collections import deque
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any, Literal

from ..summary.protocol import SummaryOutcome, SummaryRequest

StepKind = Literal["completion", "error", "raw", "delay", "stream", "close"]


@dataclass(frozen=True)
class Step:
    """One scripted answer to one chat-completions request. Build with the classmethods."""

    kind: StepKind
    content: str | None = None
    finish_reason: str | None = "stop"
    refusal: str | None = None
    status: int = 200
    body: object = None
    content_type: str = "application/json"
    seconds: float = 0.0
    then: Step | None = None
    chunks: int = 3
    cut_after: int | None = None

    @classmethod
    def completion(
        cls, content: str | None, *, finish_reason: str | None = "stop", refusal: str | None = None
    ) -> Step:
        return cls("completion", content, finish_reason, refusal)

    @classmethod
    def error(cls, status: int, body: object = None) -> Step:
        """An HTTP error; ``body`` a JSON-able object (default: an OpenAI error) or text."""
        if body is None:
            body = {"error": {"message": f"scripted error {status}", "type": "test_error"}}
        return cls("error", status=status, body=body)

    @classmethod
    def html(cls, status: int = 502, page: str | None = None) -> Step:
        page = page or "<html><head><title>Bad Gateway</title></head><body>oops</body></html>"
        return cls("raw", status=status, body=page, content_type="text/html")

    @classmethod
    def delay(cls, seconds: float, then: Step | None = None) -> Step:
        """Wait (to trip a client timeout), then answer ``then`` (default: a short summary)."""
        return cls("delay", seconds=seconds, then=then or cls.completion("## Goal\nlate"))

    @classmethod
    def stream(
        cls,
        content: str,
        *,
        chunks: int = 3,
        finish_reason: str | None = "stop",
        cut_after: int | None = None,
    ) -> Step:
        """A server-sent-events completion in ``chunks`` deltas; ``cut_after`` drops the
        connection after that many chunks (no finish reason, no ``[DONE]``)."""
        return cls("stream", content, finish_reason, chunks=chunks, cut_after=cut_after)

    @classmethod
    def close(cls) -> Step:
        """Close the connection without answering."""
        return cls("close")


@dataclass(frozen=True)
class RecordedRequest:
    method: str
    path: str
    headers: dict[str, str]
    body: Any

    @property
    def prompt(self) -> str:
        """The text of all messages of a chat request, joined."""
        messages = self.body.get("messages", []) if isinstance(self.body, dict) else []
        return "\n".join(str(m.get("content", "")) for m in messages if isinstance(m, dict))


def _completion_json(step: Step, model: str) -> dict[str, Any]:
    message = {"role": "assistant", "content": step.content, "refusal": step.refusal}
    return {
        "id": "chatcmpl-windowkeeper-test", "object": "chat.completion", "created": 0,
        "model": model,
        "choices": [{"index": 0, "message": message, "finish_reason": step.finish_reason}],
        "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
    }  # fmt: skip


def _chunk_json(model: str, delta: dict[str, Any], finish: str | None) -> bytes:
    chunk = {
        "id": "chatcmpl-windowkeeper-test", "object": "chat.completion.chunk", "created": 0,
        "model": model, "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
    }  # fmt: skip
    return f"data: {json.dumps(chunk)}\n\n".encode()


def _split(text: str, parts: int) -> list[str]:
    size = max(1, -(-len(text) // max(1, parts)))
    return [text[i : i + size] for i in range(0, len(text), size)] or [""]


class _Handler(BaseHTTPRequestHandler):
    server: _Server
    protocol_version = "HTTP/1.0"
    timeout = 10  # an idle or stuck client cannot pin a handler thread

    def log_message(self, format: str, *args: Any) -> None:
        return  # keep test output clean

    def _read_body(self) -> Any:
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        try:
            return json.loads(raw) if raw else None
        except ValueError:
            return raw.decode("utf-8", "replace")

    def _record(self, body: Any) -> None:
        headers = {k.lower(): v for k, v in self.headers.items()}
        self.server.owner.record(RecordedRequest(self.command, self.path, headers, body))

    def _send(self, status: int, payload: bytes, content_type: str) -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    def _send_json(self, status: int, value: object) -> None:
        self._send(status, json.dumps(value).encode(), "application/json")

    def do_GET(self) -> None:
        self._record(None)
        models = self.server.owner.models
        if self.path.rstrip("/").endswith("/models") and models is not None:
            self._send_json(200, {"object": "list", "data": list(models)})
        else:
            self._send_json(404, {"error": {"message": f"no route {self.path}"}})

    def do_POST(self) -> None:
        body = self._read_body()
        self._record(body)
        if not self.path.rstrip("/").endswith("/chat/completions"):
            self._send_json(404, {"error": {"message": f"no route {self.path}"}})
            return
        model = body.get("model", "test-model") if isinstance(body, dict) else "test-model"
        self._answer(self.server.owner.step_for(body), str(model))

    def _answer(self, step: Step | None, model: str) -> None:
        if step is None:
            self._send_json(500, {"error": {"message": "the test script has no step left"}})
        elif step.kind == "completion":
            self._send_json(200, _completion_json(step, model))
        elif step.kind == "error":
            if isinstance(step.body, str):
                self._send(step.status, step.body.encode(), "text/plain")
            else:
                self._send_json(step.status, step.body)
        elif step.kind == "raw":
            self._send(step.status, str(step.body).encode(), step.content_type)
        elif step.kind == "delay":
            if not self.server.owner.stopping.wait(step.seconds):
                self._answer(step.then, model)
        elif step.kind == "stream":
            self._stream(step, model)
        # "close": answer nothing; the connection is closed when the handler returns

    def _stream(self, step: Step, model: str) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.end_headers()
        pieces = _split(step.content or "", step.chunks)
        for number, piece in enumerate(pieces):
            if step.cut_after is not None and number >= step.cut_after:
                return
            delta = {"role": "assistant", "content": piece} if number == 0 else {"content": piece}
            self.wfile.write(_chunk_json(model, delta, None))
            self.wfile.flush()
        self.wfile.write(_chunk_json(model, {}, step.finish_reason))
        self.wfile.write(b"data: [DONE]\n\n")


class _Server(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, owner: OpenAITestServer) -> None:
        self.owner = owner
        super().__init__(("127.0.0.1", 0), _Handler)

    def handle_error(self, request: Any, client_address: Any) -> None:
        return  # a client that timed out and hung up is expected, not an error


class OpenAITestServer:
    """A scripted OpenAI-compatible server on ``127.0.0.1`` (see the module docstring)."""

    def __init__(self, models: Iterable[Mapping[str, Any]] | None = None) -> None:
        self.models: list[Mapping[str, Any]] | None = list(models) if models is not None else None
        self.requests: list[RecordedRequest] = []
        self.stopping = threading.Event()
        self._steps: deque[Step] = deque()
        self._lock = threading.Lock()
        self._server: _Server | None = None
        self._thread: threading.Thread | None = None

    def __enter__(self) -> OpenAITestServer:
        self._server = _Server(self)
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )
        self._thread.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stopping.set()
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()  # joins the handler threads
        if self._thread is not None:
            self._thread.join(timeout=5)
        self._server = self._thread = None

    @property
    def port(self) -> int:
        if self._server is None:
            raise RuntimeError("OpenAITestServer is not running; use it as a context manager")
        return int(self._server.server_address[1])

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def script(self, *steps: Step) -> None:
        """Queue answers for the next chat requests, in order."""
        with self._lock:
            self._steps.extend(steps)

    def next_step(self) -> Step | None:
        with self._lock:
            return self._steps.popleft() if self._steps else None

    def step_for(self, body: Any) -> Step | None:
        """The answer to a chat request with ``body``: the next scripted step. A subclass
        may answer from the request instead (the reader benchmark's stand-in model)."""
        return self.next_step()

    @property
    def pending(self) -> int:
        with self._lock:
            return len(self._steps)

    def record(self, request: RecordedRequest) -> None:
        with self._lock:
            self.requests.append(request)

    @property
    def chat_requests(self) -> list[RecordedRequest]:
        return [r for r in self.requests if r.method == "POST"]


def unused_port() -> int:
    """A loopback port that was just bound and closed: connecting to it is refused."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@dataclass
class FakeSummarizer:
    """A summarizer backed by a function; returned strings become successful bodies."""

    fn: Callable[[SummaryRequest], SummaryOutcome | str]
    name: str = "fake"
    requests: list[SummaryRequest] = field(default_factory=list)

    def summarize(self, request: SummaryRequest) -> SummaryOutcome:
        self.requests.append(request)
        result = self.fn(request)
        if isinstance(result, SummaryOutcome):
            return result
        return SummaryOutcome(body=result, summarizer=self.name)
