"""Random valid histories for fuzzing (``tests/test_fuzz.py``, ``scripts/fuzz.py``).

:func:`random_history` builds a conversation that satisfies every invariant of
:func:`windowkeeper.core.invariants.violations` (system first, alternation, every call
answered in its group) and is hostile everywhere else: tool-call arguments nested up to
5,000 levels, integer literals of 5,000 digits, broken JSON arguments, CJK, emoji and
lone surrogates, image parts (data URLs) in user messages and tool results, user sends
without text (an empty parts list, images alone), parallel calls, empty contents, huge
tool outputs. Deterministic for a given ``random.Random``.
"""

from __future__ import annotations

import json
import random
from dataclasses import dataclass, replace
from typing import Any

from ..adapters.formats import parse_conversation
from ..analysis.kinds import live_text
from ..core.config import CompressionConfig, usable_window
from ..core.invariants import violations
from ..core.messages import (
    Message,
    content_text,
    dump_jsonl,
    strip_private_keys,
    validate_messages,
)
from ..core.tokens import estimate_request_tokens
from ..engine.compressor import ContextCompressor
from ..loop.manager import ContextManager
from ..store import SessionStore, compact_session

__all__ = ("FuzzCase", "fuzz_case", "keeps_newest_request", "random_history", "random_text")

_WORDS = (
    "refund", "payment", "pytest", "error", "config.py", "def", "return", "the", "a", "fix",
    "PAY-1423", "3f2a9c1", "https://example.test/x", "exit", "0", "Traceback", "ok", "TODO",
)  # fmt: skip
_CJK = "的一是不了人我在有他这中大来上个国到说们为子和你地出道也时年得就那要下以"
_EMOJI = ("😀", "🚀", "👩‍💻", "🇫🇷", "✅", "🔥")
_PNG = (
    "data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR4nGNgYGD4"
    "DwABBAEAwS2OUAAAAABJRU5ErkJggg=="
)


def random_text(rng: random.Random, low: int = 0, high: int = 400) -> str:
    """Words, CJK, emoji and (rarely) a lone surrogate, about ``low``-``high`` chars."""
    size = rng.randint(low, high)
    pieces: list[str] = []
    length = 0
    while length < size:
        roll = rng.random()
        if roll < 0.70:
            piece = rng.choice(_WORDS)
        elif roll < 0.85:
            piece = "".join(rng.choice(_CJK) for _ in range(rng.randint(1, 12)))
        elif roll < 0.95:
            piece = rng.choice(_EMOJI)
        elif roll < 0.98:
            piece = "\n"
        else:
            piece = rng.choice(("\ud800", "\udfff", "\ud83d"))  # half an emoji
        pieces.append(piece)
        length += len(piece) + 1
    return " ".join(pieces)


def _nested(rng: random.Random, depth: int) -> Any:
    value: Any = rng.choice(("leaf", 1, None, 2.5, True))
    for _ in range(depth):
        value = [value] if rng.random() < 0.5 else {"k": value}
    return value


def _arguments(rng: random.Random) -> str:
    roll = rng.random()
    if roll < 0.55:
        return json.dumps({"command": f"pytest tests/test_{rng.randint(0, 99)}.py -q"})
    if roll < 0.65:
        return json.dumps({"path": "src/app.py", "content": random_text(rng, 300, 4_000)})
    if roll < 0.75:  # deep nesting, far beyond any recursion limit
        depth = rng.choice((50, 100, 101, 500, 1_000, 5_000))
        return "[" * depth + "]" * depth if rng.random() < 0.5 else json.dumps(_nested(rng, 40))
    if roll < 0.82:
        return '{"n": ' + "9" * rng.choice((20, 4_300, 4_301, 5_000)) + "}"
    if roll < 0.88:
        return '{"broken": "json'
    if roll < 0.94:
        return ""
    return json.dumps({"q": random_text(rng, 0, 80)}, ensure_ascii=False)


def _parts(rng: random.Random, images: bool) -> list[dict[str, Any]]:
    parts: list[dict[str, Any]] = [{"type": "text", "text": random_text(rng, 0, 300)}]
    if images:
        for _ in range(rng.randint(1, 3)):
            parts.append({"type": "image_url", "image_url": {"url": _PNG}})
    if rng.random() < 0.2:
        parts[0]["meta"] = _nested(rng, rng.randint(1, 60))  # nested, within the limit
    rng.shuffle(parts)
    return parts


def _content(rng: random.Random, low: int, high: int, images: float) -> Any:
    roll = rng.random()
    if roll < 0.05:
        return ""
    if roll < 0.25:
        return _parts(rng, rng.random() < images)
    return random_text(rng, low, high)


def _user_content(rng: random.Random) -> Any:
    """A user send: mostly text, but also the shapes with no text at all that clients
    send (an empty parts list, images alone)."""
    roll = rng.random()
    if roll < 0.06:
        return []
    if roll < 0.14:
        return _user_content_images(rng)
    return _content(rng, 1, 600, 0.3)


def _tool_round(rng: random.Random, tag: str) -> list[Message]:
    count = rng.choice((1, 1, 1, 2, 3, 4))  # parallel calls
    calls = [
        {"id": f"call_{tag}_{n}", "type": "function",
         "function": {"name": rng.choice(("bash", "read_file", "write_file", "grep")),
                      "arguments": _arguments(rng)}}
        for n in range(count)
    ]  # fmt: skip
    text = random_text(rng, 0, 120) if rng.random() < 0.4 else None
    round_: list[Message] = [{"role": "assistant", "content": text, "tool_calls": calls}]
    results = [
        {"role": "tool", "tool_call_id": c["id"], "content": _content(rng, 0, 6_000, 0.3)}
        for c in calls
    ]
    rng.shuffle(results)
    return round_ + results


def _textless_ending(rng: random.Random) -> list[Message]:
    """One or two sends without text (an empty parts list, images alone) after the last
    written request, with or without tool rounds and replies between them, the last one
    maybe unanswered: ``user(text) … user([]), assistant, user([image_url])``. The sends
    continue the written request, which must survive a compaction (design §9)."""
    ending: list[Message] = []
    sends = rng.randint(1, 2)
    for send in range(sends):
        content = [] if rng.random() < 0.4 else _user_content_images(rng)
        ending.append({"role": "user", "content": content})
        for number in range(rng.choice((0, 0, 1, 2))):
            ending.extend(_tool_round(rng, f"end{send}_{number}"))
        if ending[-1]["role"] == "user" and (send < sends - 1 or rng.random() < 0.6):
            ending.append({"role": "assistant", "content": _content(rng, 1, 400, 0.0)})
    return ending


def _user_content_images(rng: random.Random) -> list[dict[str, Any]]:
    return [{"type": "image_url", "image_url": {"url": _PNG}}] * rng.randint(1, 2)


def random_history(rng: random.Random, max_turns: int = 30) -> list[Message]:
    """A valid, hostile conversation (see the module docstring); a quarter of them end
    in sends without text (:func:`_textless_ending`)."""
    messages: list[Message] = []
    if rng.random() < 0.9:
        messages.append({"role": "system", "content": random_text(rng, 10, 1_500)})
    for turn in range(rng.randint(1, max_turns)):
        messages.append({"role": "user", "content": _user_content(rng)})
        rounds = rng.choice((0, 0, 1, 1, 2, 3, 6))
        for number in range(rounds):
            messages.extend(_tool_round(rng, f"{turn}_{number}"))
        if rounds == 0 or rng.random() < 0.8:
            messages.append({"role": "assistant", "content": _content(rng, 1, 800, 0.0)})
    if rng.random() < 0.25:
        messages.extend(_textless_ending(rng))
    return messages


# --- one fuzz case ---------------------------------------------------------------------


@dataclass(frozen=True)
class FuzzCase:
    """What one random history did: the settings, and everything that went wrong."""

    seed: int
    window: int
    force: bool
    messages: int
    exception: str = ""
    violations: tuple[str, ...] = ()
    over_window: bool = False
    reported: bool = False
    forced_floor_fits: bool = False
    task_dropped: bool = False
    """The newest written request is neither kept nor restated in the output (design §9)."""


def fuzz_case(seed: int, store: SessionStore | None = None) -> FuzzCase:
    """Compress the history of ``seed`` at a random window (2K-200K, forced or not) and
    check it: no exception anywhere (validation, compress, the manager, the JSONL round
    trip, and with a ``store`` storing, reading back and compacting it there), no
    invariant violation in the output, and whether an over-window result was reported in
    ``report.warnings``."""
    rng = random.Random(seed)
    messages = random_history(rng)
    window = int(2_000 * 100 ** rng.random())
    force = rng.random() < 0.5
    config = CompressionConfig(threshold=rng.choice((0.3, 0.5, 0.75, 0.9)))
    case = FuzzCase(seed, window, force, len(messages))
    try:
        validate_messages(messages)
        assert parse_conversation(dump_jsonl(messages)).messages == _reread(messages)
        compressor = ContextCompressor(config, context_length=window)
        result = compressor.compress(messages, force=force)
        ContextManager(ContextCompressor(config, context_length=window)).preflight(messages)
        if store is not None:
            _through_store(store, messages, ContextCompressor(config, context_length=window))
    except Exception as exc:  # the fuzz records every failure, whatever it is
        return replace(case, exception=f"{type(exc).__name__}: {' '.join(str(exc).split())[:200]}")
    after = estimate_request_tokens(result.messages)
    over = after > usable_window(window)  # compacted or not (a no-op must say so too)
    reported = any("window" in warning for warning in result.report.warnings)
    floor = _floor(messages)
    dropped = not keeps_newest_request(messages, result.messages)
    return replace(
        case, violations=tuple(violations(result.messages)), over_window=over,
        reported=reported, forced_floor_fits=force and floor <= usable_window(window),
        task_dropped=dropped,
    )  # fmt: skip


def _through_store(
    store: SessionStore, messages: list[Message], compressor: ContextCompressor
) -> None:
    session = store.create_session(messages)
    assert store.load(session.id).messages == _reread(messages), "the store changed a message"
    compact_session(store, session.id, compressor, force=True)


def _reread(messages: list[Message]) -> list[Message]:
    """What a JSONL round trip gives back: lone surrogates survive as escapes, so equal."""
    return [strip_private_keys(m) for m in messages]


def keeps_newest_request(messages: list[Message], output: list[Message]) -> bool:
    """Whether the newest user text (however many text-less sends follow it) is in the
    compacted ``output``, kept or restated. No warning excuses its loss: user text is
    never cut, so a compaction can always keep it (design §9)."""
    written = [live_text(m) for m in messages if m.get("role") == "user" and live_text(m)]
    if not written or output is messages:
        return True
    wanted = " ".join(written[-1].split())[:80]
    return wanted in " ".join(" ".join(content_text(m.get("content")) for m in output).split())


def _floor(messages: list[Message]) -> int:
    head = [m for m in messages[:1] if m.get("role") == "system"]
    newest = [m for m in messages if m.get("role") == "user"][-1:]
    return estimate_request_tokens([*head, *newest]) + 400
