"""Hiding one tool's calls from a Chat Completions stream across recall rounds.

Text deltas pass at once. Tool-call deltas are hidden when their call names the hidden
tool (the name arrives with a call's first delta, keyed by its ``index``); the visible
calls are renumbered from 0. The finish chunk, the usage chunk and ``[DONE]`` are held
back until the last round, so the client sees one stream; a finish reason of
``tool_calls`` with no visible call becomes ``stop``.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from ...core.messages import Message
from .base import RecallCall, StreamFilter, recall_calls_in
from .sse import data_json


class ChatRecallFilter(StreamFilter):
    def __init__(self, name: str) -> None:
        self.name = name
        self.usage: dict[str, Any] = {}
        self._held: list[bytes] = []
        self._visible_calls = 0
        self._new_round()

    def _new_round(self) -> None:
        self._text: list[str] = []
        self._calls: dict[int, dict[str, Any]] = {}
        self._hidden: set[int] = set()
        self._renumber: dict[int, int] = {}
        self._finish: str | None = None

    def feed(self, event: bytes) -> bytes:
        if self._finish is not None or event.strip() == b"data: [DONE]":
            self._held.append(event)  # the end of a round: held until the last one
            return b""
        chunk = data_json(event)
        choices = chunk.get("choices") if chunk else None
        if chunk is None or not isinstance(choices, list) or not choices:
            if b'"usage"' in event:
                self._held.append(event)
                return b""
            return event
        choice = choices[0] if isinstance(choices[0], Mapping) else {}
        raw_delta = choice.get("delta")
        delta: Mapping[str, Any] = raw_delta if isinstance(raw_delta, Mapping) else {}
        self._record(delta)
        visible = self._visible_delta(delta)
        if choice.get("finish_reason") is not None:
            self._finish = str(choice["finish_reason"])
        elif visible == delta:
            return event
        elif not visible:
            return b""
        rewritten = {**chunk, "choices": [{**choice, "delta": visible}, *choices[1:]]}
        out = f"data: {json.dumps(rewritten)}\n\n".encode()
        if self._finish is not None:
            self._held.append(out)
            return b""
        return out

    def _record(self, delta: Mapping[str, Any]) -> None:
        if isinstance(delta.get("content"), str):
            self._text.append(delta["content"])
        for call in delta.get("tool_calls") or ():
            index = call.get("index", 0)
            entry = self._calls.setdefault(index, {"id": "", "name": "", "arguments": ""})
            function = call.get("function") or {}
            entry["id"] = call.get("id") or entry["id"]
            entry["name"] += function.get("name") or ""
            entry["arguments"] += function.get("arguments") or ""
            if entry["name"] == self.name:
                self._hidden.add(index)

    def _visible_delta(self, delta: Mapping[str, Any]) -> dict[str, Any]:
        calls = delta.get("tool_calls")
        if not calls:
            return dict(delta)
        kept = []
        for call in calls:
            index = call.get("index", 0)
            if index in self._hidden:
                continue
            if index not in self._renumber:
                self._renumber[index] = self._visible_calls
                self._visible_calls += 1
            kept.append({**call, "index": self._renumber[index]})
        out = {k: v for k, v in delta.items() if k != "tool_calls"}
        if kept:
            out["tool_calls"] = kept
        return out

    def calls(self) -> list[RecallCall]:
        return recall_calls_in(self._canonical_calls(), self.name)

    def other_calls(self) -> bool:
        return any(i not in self._hidden for i in self._calls)

    def _canonical_calls(self) -> list[dict[str, Any]]:
        return [
            {
                "id": c["id"],
                "type": "function",
                "function": {"name": c["name"], "arguments": c["arguments"]},
            }
            for _, c in sorted(self._calls.items())
        ]

    def turn(self) -> Message | None:
        message: Message = {"role": "assistant", "content": "".join(self._text) or None}
        if self._calls:
            message["tool_calls"] = self._canonical_calls()
        return message

    def next_round(self) -> None:
        self._held = []
        self._new_round()

    def finish(self) -> bytes:
        out = []
        for event in self._held:
            chunk = data_json(event)
            choices = chunk.get("choices") if chunk else None
            first = choices[0] if isinstance(choices, list) and choices else None
            hidden_only = self._finish == "tool_calls" and self._visible_calls == 0
            if (
                chunk is not None
                and isinstance(first, Mapping)
                and hidden_only
                and first.get("finish_reason") == "tool_calls"
            ):
                fixed = {**chunk, "choices": [{**first, "finish_reason": "stop"}]}
                event = f"data: {json.dumps(fixed)}\n\n".encode()
            out.append(event)
        self._held = []
        return b"".join(out)
