from __future__ import annotations

import copy

from factories import assistant, image_part, tool, user
from windowkeeper.compaction.media import STRIPPED_IMAGE, strip_historical_media
from windowkeeper.core.messages import is_image_part


def _with_image(role: str, text: str) -> dict[str, object]:
    return {"role": role, "content": [{"type": "text", "text": text}, image_part()]}


def test_empty_and_identity() -> None:
    empty: list[dict[str, object]] = []
    assert strip_historical_media(empty) is empty
    plain = [user("a"), assistant("b")]
    assert strip_historical_media(plain) is plain


def test_older_images_stripped_newest_user_image_kept() -> None:
    messages = [_with_image("user", "first"), assistant("seen"), _with_image("user", "second")]
    snapshot = copy.deepcopy(messages)
    out = strip_historical_media(messages)
    assert messages == snapshot
    assert out[0]["content"][1] == {"type": "text", "text": STRIPPED_IMAGE}
    assert is_image_part(out[2]["content"][1])
    assert out[1] is messages[1]
    assert strip_historical_media(out) is out  # idempotent


def test_assistant_and_tool_images_before_the_anchor_are_stripped() -> None:
    messages = [
        user("go"),
        _with_image("assistant", "drawn"),
        {"role": "tool", "tool_call_id": "c", "content": [image_part()]},
        _with_image("user", "latest"),
        tool("d", "text"),
    ]
    out = strip_historical_media(messages)
    assert not any(
        is_image_part(p) for m in out[:3] if isinstance(m["content"], list) for p in m["content"]
    )
    assert is_image_part(out[3]["content"][1])


def test_single_image_in_newest_user_is_kept() -> None:
    messages = [_with_image("user", "only")]
    assert strip_historical_media(messages) is messages


def test_three_image_part_shapes() -> None:
    assert is_image_part({"type": "image_url", "image_url": {"url": "x"}})
    assert is_image_part({"type": "image", "source": {"type": "base64", "data": "x"}})
    assert is_image_part({"type": "input_image", "image_url": "x"})
    assert not is_image_part({"type": "text", "text": "x"})
    assert not is_image_part("image")
