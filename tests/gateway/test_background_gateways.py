"""Two ``windowkeeper serve`` processes on one PostgreSQL store, 24 conversations crossing
the trigger with background compaction on: one summary call per compaction (counted at
the upstream) and no row stored twice (issue 26)."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest

from bgkit import history, rounds
from windowkeeper.store import PreparedCompactions, PreparedState, open_store
from windowkeeper.testing.loopback import LoopbackUpstream, Reply
from windowkeeper.testing.serve import serve_process

MODEL = "test-model"
WINDOW = 16_000  # trigger 13,600 (85%), soft mark 11,560; a round is ~1,080 tokens
CONVERSATIONS = 24
SUMMARY = "## Next Step\nRun the refund tests again."
KEY_ENV = "WK_TEST_SUMMARY_KEY"


def reply(protocol: str, body: dict[str, Any]) -> Reply:
    if body.get("model") == "summ":  # the gateways' summarizer
        return Reply.delay(0.5, Reply.turn(SUMMARY))
    return Reply.turn("ok")


@contextmanager
def two_gateways(upstream: str, store_url: str, config: Path) -> Iterator[list[str]]:
    options = ("--upstream", upstream, "--context-length", str(WINDOW), "--store", store_url,
               "--config", str(config))  # fmt: skip
    with ExitStack() as stack:
        yield [stack.enter_context(serve_process(*options, check_exit=True)) for _ in range(2)]


def converse(urls: list[str], number: int, sent: dict[int, list[dict[str, Any]]]) -> None:
    """One conversation: past the soft mark, then over the trigger, then two more turns,
    each request to the other gateway."""
    messages = history(11)
    steps = [[], rounds(100, 2), rounds(200, 1), rounds(300, 1)]
    headers = {"X-Windowkeeper-Session": f"conv-{number}", "Authorization": "Bearer sk-test"}
    with httpx.Client(timeout=60) as client:
        for turn, more in enumerate(steps):
            if turn:
                messages = [*messages, {"role": "assistant", "content": "ok"}, *more]
            url = urls[(number + turn) % 2] + "/v1/chat/completions"
            answer = client.post(url, json={"model": MODEL, "messages": messages}, headers=headers)
            assert answer.status_code == 200, answer.text
            if turn == 0:
                # The job of the first gateway is under way before the next request.
                assert answer.headers["x-windowkeeper-compacted"] == "false"
    sent[number] = messages


def test_two_gateways_summarize_each_compaction_once(
    postgres_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(KEY_ENV, "sk-summary")
    with LoopbackUpstream(default=Reply.dynamic(reply)) as upstream:
        config = tmp_path / "windowkeeper.yaml"
        config.write_text(
            "compression:\n  prune_min_chars: 1000000\n  background_workers: 16\n"
            f"auxiliary:\n  compression:\n    model: summ\n    base_url: {upstream.base_url}\n"
            f"    api_key_env: {KEY_ENV}\n"
        )
        sent: dict[int, list[dict[str, Any]]] = {}
        with two_gateways(upstream.base_url, postgres_url, config) as urls:
            threads = [threading.Thread(target=converse, args=(urls, n, sent))
                       for n in range(CONVERSATIONS)]  # fmt: skip
            for thread in threads:
                thread.start()
            for thread in threads:
                thread.join()
        summaries = [r for r in upstream.model_requests() if r.body.get("model") == "summ"]
    assert len(sent) == CONVERSATIONS  # every conversation finished
    with open_store(postgres_url) as store:
        mine = [s for s in store.list_sessions() if s.title.startswith("windowkeeper-gateway:")]
        assert len(mine) == CONVERSATIONS  # one stored session each, none re-seeded
        assert isinstance(store, PreparedCompactions)
        compactions = applied = 0
        for record in mine:
            number = int(record.title.rsplit("conv-", 1)[1].split("/")[0])
            rows = store.load(record.id, include_archived=True).rows
            appended = [r.message for r in rows if r.origin == "append"]
            assert appended == sent[number][: len(appended)]  # no row stored twice
            assert len(appended) == len(sent[number]) - 0  # every client message stored
            assert record.compactions == 1, record
            compactions += record.compactions
            stored = store.prepared(record.id)
            applied += stored is not None and stored.state is PreparedState.APPLIED
    assert len(summaries) == compactions == CONVERSATIONS  # one summary call per compaction
    # Each gateway can run all of its jobs at once: every compaction was prepared in the
    # background (a job refused by a full pool would compact in the foreground, under the
    # same lease, and still summarize once).
    assert applied == CONVERSATIONS, applied
    print(
        f"\n{compactions} compactions, {len(summaries)} summary calls, {applied} prepared "
        "in the background and applied"
    )
