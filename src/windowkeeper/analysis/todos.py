"""Todo and plan lists an agent keeps through a tool call, recognized by their shape.

Agents name the tool differently (``TodoWrite``, ``update_plan``, ``write_todos``,
``task_tracker``, ``manage_todo_list`` ...) but the arguments look alike: a list of
objects, each with a text (``content``, ``step``, ``title``, ``description``, ``task``)
and a status (``status``, ``state``). Any call whose arguments hold such a list is read.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any, NamedTuple

from .events import ToolEvent
from .record import LazyArguments

_TEXT_KEYS = ("content", "step", "title", "description", "task", "text", "name")
_STATUS_KEYS = ("status", "state")
_STATUS = {
    "completed": "done", "complete": "done", "done": "done", "finished": "done",
    "in_progress": "in progress", "in-progress": "in progress", "inprogress": "in progress",
    "active": "in progress", "doing": "in progress", "started": "in progress",
    "pending": "pending", "todo": "pending", "not_started": "pending", "not-started": "pending",
    "open": "pending", "planned": "pending",
}  # fmt: skip
_LIST_KEYS = ("todos", "plan", "items", "tasks", "task_list", "todoList", "todo_list", "steps")
# Every list key quoted, in one pattern: arguments not yet parsed that hold none of them
# hold no list (each key is an ASCII identifier, see LazyArguments.lacks_keys).
_QUOTED_LIST_KEYS = re.compile("|".join(f'"{key}"' for key in _LIST_KEYS))


class TodoItem(NamedTuple):
    text: str
    status: str
    """``done``, ``in progress`` or ``pending``."""


def todo_items(name: str, args: Mapping[str, Any]) -> list[TodoItem] | None:
    """The items of a todo/plan call, or ``None`` when the call holds no such list."""
    if _holds_no_list(args):
        return None
    for key in _LIST_KEYS:
        value = args.get(key)
        if isinstance(value, list) and value:
            items = [_item(entry) for entry in value]
            if items and all(i is not None for i in items):
                return [i for i in items if i is not None and i.status]
    return None


def event_todos(event: ToolEvent) -> list[TodoItem] | None:
    """:func:`todo_items` of an event's call, computed once per event (the result must
    not be mutated). The memo is checked against the arguments it was computed from: an
    event's memo is its result's, which the event of the call's masked copy shares."""
    if _holds_no_list(event.args):
        # Told from the keys without a parse (most calls): nothing worth a memo entry,
        # which every event of the session would otherwise keep for the compaction.
        return None
    found: tuple[object, list[TodoItem] | None] | None = event.memo.get("todos")
    if found is None or found[0] is not event.args:
        found = event.memo["todos"] = (event.args, todo_items(event.action.name, event.args))
    return found[1]


def _holds_no_list(args: Mapping[str, Any]) -> bool:
    """Whether arguments not yet parsed name none of the list keys (so hold no list)."""
    return isinstance(args, LazyArguments) and args.lacks_keys(_QUOTED_LIST_KEYS)


def _item(entry: object) -> TodoItem | None:
    if not isinstance(entry, Mapping):
        return None
    text = next((entry[k] for k in _TEXT_KEYS if isinstance(entry.get(k), str)), None)
    status = next((entry[k] for k in _STATUS_KEYS if isinstance(entry.get(k), str)), None)
    if text is None or status is None:
        return None
    normalized = _STATUS.get(status.strip().lower().replace(" ", "_"), "")
    return TodoItem(" ".join(text.split())[:200], normalized)
