"""A stand-in summary model for the LLM variants (L, L+) of the reader benchmark.

The LLM variants need a model that writes the handoff's notes from windowkeeper's own
summary prompt. Where no model endpoint is reachable, a fresh model instance can play that
part by hand: this loopback server (windowkeeper's own OpenAI-compatible test server,
answering from the request instead of a script) serves ``windowkeeper compress
--summarizer llm`` and answers each request from a reply file that a model wrote after
reading that request alone.

The directory it serves (``DIR``):

- ``prompts/<key>.md``: written for every request that has no reply yet — the request's
  messages, exactly as sent, with instructions for the model that answers it. ``<key>`` is
  a hash of the request's messages, so the same compaction asks the same key again.
- ``replies/<key>.md``: the answering model's reply, returned verbatim as the assistant
  message of that request.

A request without a reply is answered 503 (the summarizer then falls back to the
extractive handoff, which the builder refuses to pass off as an L variant: see
``unanswered``). Run the builder with ``--summary-prompts DIR`` until nothing is pending,
have one fresh model instance answer each prompt, then build the run with ``--stand-in
DIR`` (README, "The LLM variants without an endpoint").
"""

from __future__ import annotations

import hashlib
import json
import threading
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from readerlib import render_template

from windowkeeper.testing import OpenAITestServer, Step

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


class StandIn(OpenAITestServer):
    """The reply directory, served; ``unanswered``: keys asked in this process with no reply."""

    def __init__(self, folder: Path) -> None:
        super().__init__(models=[{"id": MODEL, "object": "model"}])
        self.folder = folder
        self.unanswered: set[str] = set()
        self._files = threading.Lock()  # handler threads: one prompt file at a time
        (folder / "prompts").mkdir(parents=True, exist_ok=True)
        (folder / "replies").mkdir(parents=True, exist_ok=True)

    def step_for(self, body: Any) -> Step:
        messages = body.get("messages") if isinstance(body, dict) else None
        if not isinstance(messages, list):
            return Step.error(400, {"error": {"message": "the request has no messages list"}})
        key = request_key(messages)
        reply = self.folder / "replies" / f"{key}.md"
        if reply.exists():
            return Step.completion(reply.read_text(encoding="utf-8"))
        with self._files:
            self.unanswered.add(key)
            page = self.folder / "prompts" / f"{key}.md"
            page.write_text(prompt_page(key, messages), encoding="utf-8")
        message = "no reply yet: a model must answer this prompt (stand-in)"
        return Step.error(503, {"error": {"message": message, "type": "unavailable"}})


@contextmanager
def serving(folder: Path) -> Iterator[tuple[StandIn, str]]:
    """Serve ``folder`` on a free loopback port; yields the stand-in and its base URL."""
    with StandIn(folder) as stand_in:
        yield stand_in, stand_in.base_url
