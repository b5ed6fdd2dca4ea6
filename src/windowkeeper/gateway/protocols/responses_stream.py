"""Hiding one tool's calls from a Responses stream across recall rounds.

Every event of an output item that is a ``function_call`` of the hidden tool is dropped
(items are known by ``output_index`` from ``response.output_item.added``). Visible items
are renumbered across rounds and every forwarded event gets the next
``sequence_number``, so the client sees one response. Later rounds' ``response.created``
/ ``in_progress`` are dropped; ``response.completed`` (or ``incomplete`` / ``failed``) is
held back and, at the end, lists every visible item of every round.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from ...adapters.responses import model_turn
from ...core.messages import Message
from .base import RecallCall, StreamFilter, recall_calls_in
from .sse import data_json

_OPENING = frozenset({"response.created", "response.in_progress", "response.queued"})
_TERMINAL = frozenset({"response.completed", "response.incomplete", "response.failed"})


class ResponsesRecallFilter(StreamFilter):
    def __init__(self, name: str) -> None:
        self.name = name
        self.usage: dict[str, Any] = {}
        self._round = 0
        self._sequence = 0
        self._offset = 0
        self._visible_items: list[dict[str, Any]] = []
        self._terminal: dict[str, Any] | None = None
        self._response_id: object = None
        self._new_round()

    def _new_round(self) -> None:
        self._items: dict[int, dict[str, Any]] = {}
        self._hidden: set[int] = set()
        self._renumber: dict[int, int] = {}
        self._terminal = None

    def feed(self, event: bytes) -> bytes:
        data = data_json(event)
        kind = data.get("type") if data else None
        if data is None or not isinstance(kind, str):
            return event
        if kind in _OPENING:
            response = data.get("response")
            if self._round == 0 and isinstance(response, Mapping):
                self._response_id = response.get("id")
            return self._emit(data, event, data.get("output_index")) if self._round == 0 else b""
        if kind in _TERMINAL:
            self._terminal = data
            return b""
        index = data.get("output_index")
        if not isinstance(index, int):
            return self._emit(data, event, None)
        item = data.get("item")
        if kind == "response.output_item.added" and self._hides(item):
            self._hidden.add(index)
        if kind == "response.output_item.done" and isinstance(item, Mapping):
            self._items[index] = dict(item)
        if index in self._hidden:
            return b""
        if index not in self._renumber:
            self._renumber[index] = self._offset + len(self._renumber)
        if kind == "response.output_item.done" and isinstance(item, Mapping):
            self._visible_items.append(dict(item))
        return self._emit({**data, "output_index": self._renumber[index]}, event, index)

    def _hides(self, item: object) -> bool:
        return (
            isinstance(item, Mapping)
            and item.get("type") == "function_call"
            and item.get("name") == self.name
        )

    def _emit(self, data: dict[str, Any], event: bytes = b"", index: int | None = None) -> bytes:
        sequence, self._sequence = self._sequence, self._sequence + 1
        unchanged = data.get("output_index") == index and data.get("sequence_number") == sequence
        if event and unchanged:
            return event
        out = {**data, "sequence_number": sequence} if "sequence_number" in data else data
        return f"event: {data['type']}\ndata: {json.dumps(out)}\n\n".encode()

    def _turn_items(self) -> list[dict[str, Any]]:
        return [item for _, item in sorted(self._items.items())]

    def calls(self) -> list[RecallCall]:
        turn = self.turn()
        return recall_calls_in(turn.get("tool_calls") or [] if turn else [], self.name)

    def other_calls(self) -> bool:
        return any(
            item.get("type") in ("function_call", "custom_tool_call")
            for index, item in self._items.items()
            if index not in self._hidden
        )

    def turn(self) -> Message | None:
        items = self._turn_items()
        return model_turn(items) if items else None

    def next_round(self) -> None:
        self._round += 1
        self._offset += len(self._renumber)
        self._new_round()

    def finish(self) -> bytes:
        terminal = self._terminal
        if terminal is None:
            return b""
        response = terminal.get("response")
        if isinstance(response, Mapping):
            # One response for the client: the first round's id, every visible item.
            whole = {**response, "output": self._visible_items}
            if self._response_id is not None:
                whole["id"] = self._response_id
            terminal = {**terminal, "response": whole}
        self._terminal = None
        return self._emit(terminal)
