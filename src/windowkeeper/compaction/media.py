"""Historical media stripping (design §4).

Images older than the newest image-bearing user message are replaced by a text
placeholder: the model keeps the newest picture the user showed it, and old screenshots
stop costing a flat image price on every request.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..core.messages import Message, image_count, is_image_part

STRIPPED_IMAGE = "[older image removed at compaction]"


def _has_image(message: object) -> bool:
    # Non-dict entries pass through untouched (they are not ours to judge).
    return isinstance(message, Mapping) and image_count(message) > 0


def _without_images(message: Mapping[str, Any]) -> Message:
    content = message["content"]
    parts = [{"type": "text", "text": STRIPPED_IMAGE} if is_image_part(p) else p for p in content]
    return {**message, "content": parts}


def strip_historical_media(messages: list[Message]) -> list[Message]:
    """Replace images before the newest image-bearing user message.

    Returns the input list itself when nothing changes; changed messages are copies.
    """
    anchor = None
    for index in range(len(messages) - 1, -1, -1):
        message = messages[index]
        if isinstance(message, Mapping) and message.get("role") == "user" and _has_image(message):
            anchor = index
            break
    if anchor is None or not any(_has_image(m) for m in messages[:anchor]):
        return messages
    out = list(messages)
    for index in range(anchor):
        if _has_image(out[index]):
            out[index] = _without_images(out[index])
    return out
