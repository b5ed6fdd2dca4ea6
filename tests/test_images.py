"""Shrinking and stripping base64 images; every image is generated in memory with Pillow."""

from __future__ import annotations

import base64
import copy
import io
import random
from typing import Any

import pytest
from PIL import Image

from windowkeeper.compaction.images import IMAGE_PLACEHOLDER, shrink_images, strip_images
from windowkeeper.core.errors import ConfigError

Message = dict[str, Any]


def _encode(image: Image.Image, fmt: str = "PNG") -> str:
    buffer = io.BytesIO()
    image.save(buffer, format=fmt)
    return base64.b64encode(buffer.getvalue()).decode("ascii")


def noise(width: int, height: int, seed: int = 7) -> Image.Image:
    """Random pixels: PNG cannot compress them, so the payload is large."""
    data = random.Random(seed).randbytes(width * height * 3)
    return Image.frombytes("RGB", (width, height), data)


def solid(width: int, height: int, mode: str = "RGB") -> Image.Image:
    colour: Any = (200, 30, 30, 255) if mode == "RGBA" else (200, 30, 30)
    return Image.new(mode, (width, height), colour)


def data_url(image: Image.Image, fmt: str = "PNG") -> str:
    return f"data:image/{fmt.lower()};base64,{_encode(image, fmt)}"


def chat_part(url: str) -> dict[str, Any]:
    return {"type": "image_url", "image_url": {"url": url, "detail": "high"}}


def decoded(url_or_data: str) -> Image.Image:
    data = url_or_data.split(",", 1)[1] if url_or_data.startswith("data:") else url_or_data
    return Image.open(io.BytesIO(base64.b64decode(data)))


def test_nothing_to_do_returns_the_input_list() -> None:
    messages: list[Message] = [
        {"role": "system", "content": "sys"},
        {"role": "user", "content": [chat_part("https://example.com/cat.png")]},
        {"role": "user", "content": [chat_part(data_url(solid(40, 30)))]},
    ]
    result = shrink_images(messages)
    assert result.messages is messages
    assert (result.shrunk, result.unshrinkable) == (0, ())
    assert not result.worth_retrying


def test_bytes_trigger_reencodes_smaller_and_keeps_aspect() -> None:
    url = data_url(noise(400, 300))
    messages: list[Message] = [
        {"role": "user", "content": "look"},
        {"role": "user", "content": [{"type": "text", "text": "pic"}, chat_part(url)]},
    ]
    snapshot = copy.deepcopy(messages)
    result = shrink_images(messages, max_bytes=40_000)
    assert messages == snapshot  # never mutated
    assert result.shrunk == 1 and result.worth_retrying
    assert result.messages[0] is messages[0]
    new_part = result.messages[1]["content"][1]
    assert result.messages[1]["content"][0] is messages[1]["content"][0]
    assert new_part["image_url"]["detail"] == "high"  # other keys of the part survive
    new_url = new_part["image_url"]["url"]
    assert new_url.startswith("data:image/jpeg;base64,")
    assert len(new_url.split(",", 1)[1]) <= 40_000 < len(url.split(",", 1)[1])
    width, height = decoded(new_url).size
    assert abs(width / height - 4 / 3) < 0.02


def test_dimension_trigger_downscales_to_the_cap() -> None:
    messages: list[Message] = [{"role": "user", "content": [chat_part(data_url(solid(3000, 100)))]}]
    result = shrink_images(messages, max_dimension=1000)
    assert result.shrunk == 1
    image = decoded(result.messages[0]["content"][0]["image_url"]["url"])
    assert max(image.size) <= 1000
    assert image.size[0] // image.size[1] == 30


def test_large_jpeg_is_drafted_then_resized() -> None:
    messages: list[Message] = [
        {"role": "user", "content": [chat_part(data_url(noise(2400, 600), "JPEG"))]}
    ]
    result = shrink_images(messages, max_dimension=500)
    image = decoded(result.messages[0]["content"][0]["image_url"]["url"])
    assert image.size == (500, 125)


def test_transparency_keeps_png_and_alpha() -> None:
    image = solid(2000, 500, "RGBA")
    image.putpixel((0, 0), (0, 0, 0, 0))
    messages: list[Message] = [{"role": "user", "content": [chat_part(data_url(image))]}]
    result = shrink_images(messages, max_dimension=500)
    url = result.messages[0]["content"][0]["image_url"]["url"]
    assert url.startswith("data:image/png;base64,")
    assert decoded(url).mode == "RGBA"


def test_opaque_alpha_becomes_jpeg() -> None:
    messages: list[Message] = [
        {"role": "user", "content": [chat_part(data_url(solid(2000, 500, "RGBA")))]}
    ]
    result = shrink_images(messages, max_dimension=500)
    assert result.messages[0]["content"][0]["image_url"]["url"].startswith("data:image/jpeg")


def test_all_part_shapes_keep_their_shape() -> None:
    big = noise(300, 300)
    raw = _encode(big)
    messages: list[Message] = [
        {"role": "user", "content": [{"type": "input_image", "image_url": data_url(big)}]},
        {
            "role": "user",
            "content": [
                {
                    "type": "image",
                    "source": {"type": "base64", "media_type": "image/png", "data": raw},
                }
            ],
        },
        {"role": "user", "content": [{"type": "image_url", "image_url": data_url(big)}]},
    ]
    result = shrink_images(messages, max_bytes=30_000)
    assert result.shrunk == 3 and not result.unshrinkable
    responses, anthropic, chat_string = (m["content"][0] for m in result.messages)
    assert responses["image_url"].startswith("data:image/jpeg;base64,")
    assert anthropic["source"]["media_type"] == "image/jpeg"
    assert anthropic["source"]["type"] == "base64"
    assert len(anthropic["source"]["data"]) <= 30_000
    assert decoded(anthropic["source"]["data"]).format == "JPEG"
    assert isinstance(chat_string["image_url"], str)


def test_images_inside_anthropic_tool_results_are_reached() -> None:
    raw = _encode(noise(300, 300))
    image = {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": raw}}
    result_block = {"type": "tool_result", "tool_use_id": "t1", "content": [image]}
    messages: list[Message] = [{"role": "user", "content": [result_block]}]
    result = shrink_images(messages, max_bytes=30_000)
    assert result.shrunk == 1
    new_block = result.messages[0]["content"][0]
    assert new_block["tool_use_id"] == "t1"
    assert len(new_block["content"][0]["source"]["data"]) <= 30_000
    assert result_block["content"][0] is image  # input untouched


def test_undecodable_oversized_part_is_reported_not_dropped() -> None:
    junk = "data:image/png;base64," + base64.b64encode(b"not an image" * 5_000).decode()
    messages: list[Message] = [
        {"role": "user", "content": "hi"},
        {"role": "tool", "tool_call_id": "c", "content": [chat_part(junk)]},
    ]
    result = shrink_images(messages, max_bytes=1_000)
    assert result.messages is messages
    assert result.shrunk == 0 and not result.worth_retrying
    (problem,) = result.unshrinkable
    assert problem.startswith("message 1 part 0:") and "undecodable" in problem


def test_undecodable_part_within_limits_is_left_alone() -> None:
    messages: list[Message] = [
        {"role": "user", "content": [chat_part("data:image/png;base64,AAAA")]}
    ]
    result = shrink_images(messages)
    assert result.messages is messages and result.unshrinkable == ()


def test_part_that_cannot_fit_is_reported() -> None:
    messages: list[Message] = [{"role": "user", "content": [chat_part(data_url(noise(200, 200)))]}]
    result = shrink_images(messages, max_bytes=200)
    assert result.messages is messages
    assert len(result.unshrinkable) == 1 and "still over 200 bytes" in result.unshrinkable[0]


def test_one_shrunk_and_one_unshrinkable() -> None:
    junk = "data:image/png;base64," + base64.b64encode(b"x" * 60_000).decode()
    messages: list[Message] = [
        {"role": "user", "content": [chat_part(data_url(noise(300, 300))), chat_part(junk)]}
    ]
    result = shrink_images(messages, max_bytes=40_000)
    assert result.shrunk == 1 and len(result.unshrinkable) == 1
    assert not result.worth_retrying
    assert result.messages[0]["content"][1] is messages[0]["content"][1]


@pytest.mark.parametrize(("max_bytes", "max_dimension"), [(0, 10), (10, 0), (-1, -1)])
def test_bad_limits(max_bytes: int, max_dimension: int) -> None:
    with pytest.raises(ConfigError, match="must be positive"):
        shrink_images([], max_bytes=max_bytes, max_dimension=max_dimension)


def test_strip_images_defaults_to_tool_messages() -> None:
    image = chat_part(data_url(solid(10, 10)))
    messages: list[Message] = [
        {"role": "user", "content": [image]},
        {"role": "tool", "tool_call_id": "a", "content": [{"type": "text", "text": "x"}, image]},
        {"role": "tool", "tool_call_id": "b", "content": "plain"},
    ]
    snapshot = copy.deepcopy(messages)
    out, count = strip_images(messages)
    assert count == 1 and messages == snapshot
    assert out[0] is messages[0] and out[2] is messages[2]
    assert out[1]["content"] == [
        {"type": "text", "text": "x"},
        {"type": "text", "text": IMAGE_PLACEHOLDER},
    ]
    everything, total = strip_images(messages, roles=None)
    assert total == 2 and everything[0]["content"][0]["text"] == IMAGE_PLACEHOLDER


def test_strip_images_identity_and_nested_tool_results() -> None:
    plain: list[Message] = [{"role": "tool", "tool_call_id": "a", "content": "ok"}]
    assert strip_images(plain) == (plain, 0)
    assert strip_images(plain)[0] is plain
    image = {"type": "image", "source": {"type": "url", "url": "https://example.com/x.png"}}
    nested: list[Message] = [
        {
            "role": "user",
            "content": [{"type": "tool_result", "tool_use_id": "t", "content": [image]}],
        }
    ]
    out, count = strip_images(nested, roles=("user",))
    assert count == 1
    assert out[0]["content"][0]["content"] == [{"type": "text", "text": IMAGE_PLACEHOLDER}]
