"""The scripted OpenAI-compatible test server and the fake summarizer."""

from __future__ import annotations

import json
import threading
import time
from datetime import date

import httpx
import pytest

from windowkeeper.core.report import FailureKind
from windowkeeper.summary.protocol import Summarizer, SummaryFailure, SummaryOutcome, SummaryRequest
from windowkeeper.testing import FakeSummarizer, OpenAITestServer, Step, unused_port


def test_records_requests_and_answers_in_order() -> None:
    with OpenAITestServer() as server, httpx.Client(timeout=5) as client:
        server.script(Step.completion("first"), Step.error(418, {"error": {"message": "tea"}}))
        url = server.base_url + "/chat/completions"
        body = {"model": "m", "messages": [{"role": "user", "content": "hi"}]}
        one = client.post(url, json=body, headers={"Authorization": "Bearer abc"})
        two = client.post(url, json=body)
        three = client.post(url, json=body)
        assert one.json()["choices"][0]["message"]["content"] == "first"
        assert two.status_code == 418 and two.json()["error"]["message"] == "tea"
        assert three.status_code == 500  # an empty script never loops or hangs
        assert server.pending == 0
        first = server.requests[0]
        assert (first.method, first.path) == ("POST", "/v1/chat/completions")
        assert first.headers["authorization"] == "Bearer abc"
        assert first.body == body and first.prompt == "hi"


def test_models_listing() -> None:
    with OpenAITestServer(models=[{"id": "m", "context_length": 1}]) as server:
        listing = httpx.get(server.base_url + "/models", timeout=5).json()
        assert listing == {"object": "list", "data": [{"id": "m", "context_length": 1}]}
        server.models = None
        assert httpx.get(server.base_url + "/models", timeout=5).status_code == 404


def test_stream_is_server_sent_events() -> None:
    with OpenAITestServer() as server:
        server.script(Step.stream("abcdef", chunks=3))
        body = {"model": "m", "messages": [], "stream": True}
        response = httpx.post(server.base_url + "/chat/completions", json=body, timeout=5)
        events = [line[6:] for line in response.text.splitlines() if line.startswith("data: ")]
        assert events[-1] == "[DONE]"
        chunks = [json.loads(e) for e in events[:-1]]
        text = "".join(c["choices"][0]["delta"].get("content", "") for c in chunks)
        assert text == "abcdef" and chunks[-1]["choices"][0]["finish_reason"] == "stop"


def test_close_and_html_steps() -> None:
    with OpenAITestServer() as server, httpx.Client(timeout=5) as client:
        server.script(Step.close(), Step.html(502))
        url = server.base_url + "/chat/completions"
        with pytest.raises(httpx.RemoteProtocolError):
            client.post(url, json={})
        page = client.post(url, json={})
        assert page.status_code == 502 and page.text.startswith("<html>")


def test_delay_ends_when_the_server_stops() -> None:
    results: list[str] = []

    def slow_call(url: str) -> None:
        try:
            httpx.post(url, json={}, timeout=30)
            results.append("answered")
        except httpx.HTTPError as exc:
            results.append(type(exc).__name__)

    started = time.monotonic()
    with OpenAITestServer() as server:
        server.script(Step.delay(60))
        worker = threading.Thread(target=slow_call, args=(server.base_url + "/chat/completions",))
        worker.start()
        while not server.requests:
            time.sleep(0.01)
    worker.join(timeout=10)
    assert not worker.is_alive() and results
    assert time.monotonic() - started < 10


def test_port_is_closed_after_exit() -> None:
    with OpenAITestServer() as server:
        url = server.base_url + "/models"
    with pytest.raises(httpx.ConnectError):
        httpx.get(url, timeout=2)
    with pytest.raises(httpx.ConnectError):
        httpx.get(f"http://127.0.0.1:{unused_port()}/", timeout=2)


def test_fake_summarizer() -> None:
    request = SummaryRequest([], None, None, 2_000, date(2025, 1, 1), None, False)
    fake = FakeSummarizer(lambda r: f"## Goal\nbudget {r.budget_tokens}")
    assert isinstance(fake, Summarizer)
    assert fake.summarize(request) == SummaryOutcome(body="## Goal\nbudget 2000", summarizer="fake")
    failing = FakeSummarizer(
        lambda r: SummaryOutcome(failure=SummaryFailure(FailureKind.EMPTY, "x"), summarizer="f")
    )
    outcome = failing.summarize(request)
    assert outcome.failure is not None and outcome.failure.kind is FailureKind.EMPTY
    assert fake.requests == [request]
