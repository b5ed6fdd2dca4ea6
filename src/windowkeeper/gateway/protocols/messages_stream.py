"""Hiding one tool's calls from an Anthropic Messages stream across recall rounds.

Content blocks that are ``tool_use`` of the hidden tool are dropped (known by ``index``
from ``content_block_start``); visible blocks are renumbered across rounds. Later
rounds' ``message_start`` is dropped; ``message_delta`` and ``message_stop`` are held
back until the last round, and a ``tool_use`` stop reason with no visible call becomes
``end_turn``.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from ...adapters.anthropic import message_from_anthropic
from ...core.messages import Message
from .base import RecallCall, StreamFilter, recall_calls_in
from .sse import data_json


class MessagesRecallFilter(StreamFilter):
    def __init__(self, name: str) -> None:
        self.name = name
        self.usage: dict[str, Any] = {}
        self._round = 0
        self._offset = 0
        self._visible_calls = 0
        self._held: list[dict[str, Any]] = []
        self._new_round()

    def _new_round(self) -> None:
        self._blocks: dict[int, dict[str, Any]] = {}
        self._partial: dict[int, str] = {}
        self._hidden: set[int] = set()
        self._renumber: dict[int, int] = {}
        self._held = []

    def feed(self, event: bytes) -> bytes:
        data = data_json(event)
        kind = data.get("type") if data else None
        if data is None or not isinstance(kind, str):
            return event
        if kind == "message_start":
            return event if self._round == 0 else b""
        if kind in ("message_delta", "message_stop"):
            self._held.append(data)
            return b""
        index = data.get("index")
        if not isinstance(index, int):
            return event
        self._record(kind, index, data)
        if index in self._hidden:
            return b""
        if index not in self._renumber:
            self._renumber[index] = self._offset + len(self._renumber)
        if self._renumber[index] == index:
            return event
        return _encode({**data, "index": self._renumber[index]})

    def _record(self, kind: str, index: int, data: Mapping[str, Any]) -> None:
        if kind == "content_block_start":
            block = dict(data.get("content_block") or {})
            self._blocks[index] = block
            if block.get("type") == "tool_use":
                if block.get("name") == self.name:
                    self._hidden.add(index)
                else:
                    self._visible_calls += 1
        elif kind == "content_block_delta":
            delta = data.get("delta") or {}
            block = self._blocks.setdefault(index, {"type": "text", "text": ""})
            if delta.get("type") == "text_delta":
                block["text"] = block.get("text", "") + str(delta.get("text", ""))
            elif delta.get("type") == "input_json_delta":
                self._partial[index] = self._partial.get(index, "") + str(
                    delta.get("partial_json", "")
                )
            elif delta.get("type") == "thinking_delta":
                block["thinking"] = block.get("thinking", "") + str(delta.get("thinking", ""))
            elif delta.get("type") == "signature_delta":
                block["signature"] = str(delta.get("signature", ""))

    def _turn_blocks(self) -> list[dict[str, Any]]:
        blocks = []
        for index, block in sorted(self._blocks.items()):
            if block.get("type") == "tool_use" and index in self._partial:
                try:
                    block = {**block, "input": json.loads(self._partial[index] or "{}")}
                except ValueError:
                    block = {**block, "input": {}}
            blocks.append(block)
        return blocks

    def calls(self) -> list[RecallCall]:
        turn = self.turn()
        return recall_calls_in(turn.get("tool_calls") or [] if turn else [], self.name)

    def other_calls(self) -> bool:
        return any(
            b.get("type") == "tool_use" and i not in self._hidden for i, b in self._blocks.items()
        )

    def turn(self) -> Message | None:
        blocks = self._turn_blocks()
        if not blocks:
            return None
        turns = message_from_anthropic({"role": "assistant", "content": blocks}, "stream")
        return turns[0] if turns else None

    def next_round(self) -> None:
        self._round += 1
        self._offset += len(self._renumber)
        self._new_round()

    def finish(self) -> bytes:
        out = []
        for data in self._held:
            delta = data.get("delta")
            if (
                data.get("type") == "message_delta"
                and isinstance(delta, Mapping)
                and delta.get("stop_reason") == "tool_use"
                and self._visible_calls == 0
            ):
                data = {**data, "delta": {**delta, "stop_reason": "end_turn"}}
            out.append(_encode(data))
        self._held = []
        return b"".join(out)


def _encode(data: Mapping[str, Any]) -> bytes:
    return f"event: {data['type']}\ndata: {json.dumps(data)}\n\n".encode()
