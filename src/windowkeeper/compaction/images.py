"""Oversized base64 images: shrink them with Pillow, or strip them (413 recovery, design §2).

Providers reject images whose payload or pixel size is over their limits, and text
compaction cannot make a base64 payload smaller. :func:`shrink_images` re-encodes the
offending parts; :func:`strip_images` replaces image parts with a text placeholder when
shrinking is not enough.

Both functions are copy-on-write: the input list and its dicts are never mutated; when
nothing changes the input list itself is returned, otherwise a new list in which only the
touched messages (and the touched parts inside them) are copies.

Image parts handled (also inside an Anthropic ``tool_result`` block's content):

- OpenAI chat ``{"type": "image_url", "image_url": {"url": "data:image/png;base64,..."}}``
  (the string form ``"image_url": "data:..."`` too);
- Responses ``{"type": "input_image", "image_url": "data:..."}``;
- Anthropic ``{"type": "image", "source": {"type": "base64", "media_type": ..., "data": ...}}``.

http(s) URLs and file ids are never touched: the provider fetches them itself.
"""

from __future__ import annotations

import base64
import binascii
import io
import math
import re
from collections.abc import Callable, Collection, Iterator, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ..core.errors import ConfigError
from ..core.messages import Message, is_image_part

if TYPE_CHECKING:
    from PIL import Image

DEFAULT_MAX_BYTES = 4 * 1024 * 1024
DEFAULT_MAX_DIMENSION = 8_000
IMAGE_PLACEHOLDER = "[image removed: the request was too large for the provider]"

# Re-encoding ladder: every quality at one size, then the size shrinks by a quarter.
_JPEG_QUALITIES = (85, 70, 55, 40)
_SCALE_STEP = 0.75
# Below this longest side an image carries too little to be worth sending; give up.
_MIN_SIDE = 64

_DATA_URL = re.compile(r"data:([^;,]*)((?:;[^;,]*)*?);base64,(.*)", re.DOTALL | re.IGNORECASE)


@dataclass(frozen=True)
class ShrinkResult:
    """Outcome of :func:`shrink_images`.

    Attributes:
        messages: the new list (the input list itself when nothing was replaced).
        shrunk: number of image parts replaced by a smaller re-encoding.
        unshrinkable: one line per oversized part left as it was, e.g.
            ``"message 4 part 1: not a decodable image (...)"``.
    """

    messages: list[Message]
    shrunk: int = 0
    unshrinkable: tuple[str, ...] = ()

    @property
    def worth_retrying(self) -> bool:
        """True when something shrank and no oversized part remains.

        A retry with an unshrinkable part left in would resend what the provider rejected.
        """
        return self.shrunk > 0 and not self.unshrinkable


@dataclass(frozen=True)
class _Payload:
    mime: str
    data: str  # base64 text


# --- reading and writing the payload of an image part ----------------------------------


def _parse_data_url(url: object) -> _Payload | None:
    if not isinstance(url, str):
        return None
    match = _DATA_URL.fullmatch(url)
    if match is None:
        return None
    return _Payload(match.group(1) or "application/octet-stream", match.group(3))


def _read_payload(part: Mapping[str, Any]) -> _Payload | None:
    """The base64 payload of an image part, or None (URL, file id, not an image)."""
    kind = part.get("type")
    if kind == "image":
        source = part.get("source")
        if isinstance(source, Mapping) and source.get("type") == "base64":
            data = source.get("data")
            mime = source.get("media_type")
            if isinstance(data, str):
                return _Payload(mime if isinstance(mime, str) else "image/png", data)
        return None
    if kind not in ("image_url", "input_image"):
        return None
    value = part.get("image_url")
    if isinstance(value, Mapping):
        value = value.get("url")
    return _parse_data_url(value)


def _write_payload(part: Mapping[str, Any], payload: _Payload) -> dict[str, Any]:
    """A copy of ``part`` carrying ``payload`` in the part's own shape."""
    if part.get("type") == "image":
        source = part["source"]
        return {**part, "source": {**source, "media_type": payload.mime, "data": payload.data}}
    url = f"data:{payload.mime};base64,{payload.data}"
    value = part.get("image_url")
    if isinstance(value, Mapping):
        return {**part, "image_url": {**value, "url": url}}
    return {**part, "image_url": url}


# --- re-encoding ------------------------------------------------------------------------


def _b64_len(size: int) -> int:
    return 4 * ((size + 2) // 3)


def _alpha_matters(image: Image.Image) -> bool:
    """True when the image has a transparent pixel (then PNG, else JPEG)."""
    has_alpha = image.mode in ("RGBA", "LA", "PA", "RGBa", "La") or (
        image.mode == "P" and "transparency" in image.info
    )
    if not has_alpha:
        return False
    low, _ = image.convert("RGBA").getchannel("A").getextrema()
    return isinstance(low, int | float) and low < 255


def _candidates(frame: Image.Image, keep_alpha: bool) -> Iterator[tuple[bytes, str]]:
    """Encodings of one frame, largest first."""
    if keep_alpha:
        buffer = io.BytesIO()
        frame.save(buffer, format="PNG", optimize=True)
        yield buffer.getvalue(), "image/png"
        return
    for quality in _JPEG_QUALITIES:
        buffer = io.BytesIO()
        frame.save(buffer, format="JPEG", quality=quality, optimize=True)
        yield buffer.getvalue(), "image/jpeg"


def _reencode(image: Image.Image, *, max_bytes: int, max_dimension: int) -> _Payload | None:
    """Downscale (aspect kept) and re-encode until the base64 fits ``max_bytes``.

    Returns None when even a ``_MIN_SIDE`` image does not fit.
    """
    from PIL import Image

    keep_alpha = _alpha_matters(image)
    base = image.convert("RGBA" if keep_alpha else "RGB")
    width, height = base.size
    scale = min(1.0, max_dimension / max(width, height))
    while True:
        size = (max(1, int(width * scale)), max(1, int(height * scale)))
        frame = base if size == base.size else base.resize(size, Image.Resampling.LANCZOS)
        for data, mime in _candidates(frame, keep_alpha):
            if _b64_len(len(data)) <= max_bytes:
                return _Payload(mime, base64.b64encode(data).decode("ascii"))
        if max(size) <= _MIN_SIDE:
            return None
        scale *= _SCALE_STEP


def _draft(image: Image.Image, max_dimension: int) -> None:
    """Let a JPEG decoder downscale while decoding (cheap, never below the target size)."""
    longest = max(image.size)
    if image.format == "JPEG" and longest > max_dimension:
        ratio = max_dimension / longest
        width, height = image.size
        image.draft(image.mode, (math.ceil(width * ratio), math.ceil(height * ratio)))


# --- the walk ---------------------------------------------------------------------------


@dataclass
class _Shrinker:
    max_bytes: int
    max_dimension: int
    shrunk: int = 0
    problems: list[str] = field(default_factory=list)

    def parts(self, parts: list[Any], where: str) -> list[Any]:
        """The parts with oversized images replaced (the same list when none was)."""
        out: list[Any] | None = None
        for number, part in enumerate(parts):
            new = self.part(part, f"{where} part {number}")
            if new is not part:
                out = out if out is not None else list(parts)
                out[number] = new
        return out if out is not None else parts

    def part(self, part: Any, where: str) -> Any:
        if not isinstance(part, Mapping):
            return part
        inner = part.get("content")
        if part.get("type") == "tool_result" and isinstance(inner, list):
            new_inner = self.parts(inner, f"{where} (tool_result)")
            return part if new_inner is inner else {**part, "content": new_inner}
        payload = _read_payload(part)
        if payload is None:
            return part
        replacement = self.payload(payload, where)
        if replacement is None:
            return part
        self.shrunk += 1
        return _write_payload(part, replacement)

    def payload(self, payload: _Payload, where: str) -> _Payload | None:
        """A smaller payload, or None (fine as it is, or reported as unshrinkable)."""
        # Pillow is imported here, when an image is read: most compactions see none.
        from PIL import Image, ImageOps, UnidentifiedImageError

        over_bytes = len(payload.data) > self.max_bytes
        try:
            raw = base64.b64decode(payload.data)
            image = Image.open(io.BytesIO(raw))
        except (binascii.Error, ValueError, UnidentifiedImageError, OSError) as exc:
            # An image we cannot read is left alone unless its size alone is the problem.
            if over_bytes:
                self.problems.append(f"{where}: over {self.max_bytes} bytes, undecodable ({exc})")
            return None
        except Image.DecompressionBombError as exc:
            self.problems.append(f"{where}: too many pixels to decode safely ({exc})")
            return None
        over_dimension = max(image.size) > self.max_dimension
        if not (over_bytes or over_dimension):
            return None
        try:
            _draft(image, self.max_dimension)
            image.load()
            new = _reencode(
                ImageOps.exif_transpose(image),
                max_bytes=self.max_bytes,
                max_dimension=self.max_dimension,
            )
        except (UnidentifiedImageError, OSError, ValueError) as exc:
            self.problems.append(f"{where}: cannot re-encode ({exc})")
            return None
        # Accept gate: a "bytes" trigger needs a smaller payload; both need the pixel cap,
        # which _reencode guarantees by construction.
        if new is None or (over_bytes and len(new.data) >= len(payload.data)):
            self.problems.append(f"{where}: still over {self.max_bytes} bytes after re-encoding")
            return None
        return new


def shrink_images(
    messages: list[Message],
    *,
    max_bytes: int = DEFAULT_MAX_BYTES,
    max_dimension: int = DEFAULT_MAX_DIMENSION,
) -> ShrinkResult:
    """Re-encode base64 images whose payload exceeds ``max_bytes`` (base64 characters) or
    whose longest side exceeds ``max_dimension`` pixels.

    Images are downscaled keeping their aspect ratio, EXIF orientation applied, and saved
    as JPEG (PNG when a pixel is transparent), lowering quality then size until the base64
    fits. Animated images keep their first frame. Oversized parts that cannot be shrunk
    stay as they were and are listed in :attr:`ShrinkResult.unshrinkable`; undecodable
    images within ``max_bytes`` are left alone (nothing shows they are oversized).
    """
    if max_bytes <= 0 or max_dimension <= 0:
        raise ConfigError(
            f"image limits must be positive, got max_bytes={max_bytes}, "
            f"max_dimension={max_dimension}"
        )
    shrinker = _Shrinker(max_bytes, max_dimension)
    out = _map_contents(messages, shrinker.parts)
    return ShrinkResult(out, shrinker.shrunk, tuple(shrinker.problems))


def strip_images(
    messages: list[Message], *, roles: Collection[str] | None = ("tool",)
) -> tuple[list[Message], int]:
    """Replace image parts of messages with these ``roles`` (None: every role) by a text
    placeholder; returns the messages and how many parts were replaced.

    Used when a provider answered 413: text compaction cannot make image bytes smaller.
    URL images are stripped too (they count against the same request limits).
    """
    count = 0

    def strip(parts: list[Any], where: str) -> list[Any]:
        nonlocal count
        out: list[Any] | None = None
        for number, part in enumerate(parts):
            new = part
            if is_image_part(part):
                new = {"type": "text", "text": IMAGE_PLACEHOLDER}
                count += 1
            elif isinstance(part, Mapping) and part.get("type") == "tool_result":
                inner = part.get("content")
                if isinstance(inner, list) and (stripped := strip(inner, where)) is not inner:
                    new = {**part, "content": stripped}
            if new is not part:
                out = out if out is not None else list(parts)
                out[number] = new
        return out if out is not None else parts

    wanted = None if roles is None else frozenset(roles)
    out = _map_contents(messages, strip, wanted)
    return out, count


def _map_contents(
    messages: list[Message],
    transform: Callable[[list[Any], str], list[Any]],
    roles: frozenset[str] | None = None,
) -> list[Message]:
    """Apply ``transform(parts, where)`` to each list content; copy only what changed."""
    out: list[Message] | None = None
    for index, message in enumerate(messages):
        if not isinstance(message, Mapping):
            continue
        if roles is not None and message.get("role") not in roles:
            continue
        content = message.get("content")
        if not isinstance(content, list):
            continue
        new_content = transform(content, f"message {index}")
        if new_content is not content:
            out = out if out is not None else list(messages)
            out[index] = {**message, "content": new_content}
    return out if out is not None else messages
