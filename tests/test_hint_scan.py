"""Secret masking with Hyperscan finds what the pure-Python path finds (core/hint_scan.py).

Both paths run in every test run: ``scan_path`` switches the one ``redact`` uses, and
the properties compare the scanner's positions with ``str.find`` and with
``secret_hints.lowered_positions`` on generated text full of hint fragments (the same
generator as tests/test_secret_hints.py), and ``redact`` on each path with the other.
CI also runs the whole suite once with ``WINDOWKEEPER_PURE_PYTHON_SCAN=1``.
"""

from __future__ import annotations

import subprocess
import sys

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from test_secret_hints import PADDING, TEXTS
from windowkeeper.core import hint_scan, secret_hints, secrets
from windowkeeper.core.secrets import redact

pytestmark = pytest.mark.skipif(hint_scan.hyperscan is None, reason="no hyperscan wheel")
# Built here, not taken from secrets: under WINDOWKEEPER_PURE_PYTHON_SCAN=1 it has none.
EXACT = sorted({h for r in secrets._RULES if not r.insensitive for h in r.hints})
SCANNER = hint_scan.HintScanner(
    {*EXACT, *secrets._ENV_HINTS}, secret_hints.LOWERED_HINTS
) if hint_scan.hyperscan else None  # fmt: skip


def _redact_with(scanner: hint_scan.HintScanner | None, text: str) -> str:
    active = secrets._SCANNER
    secrets._SCANNER = scanner
    try:
        return redact(text)
    finally:
        secrets._SCANNER = active


def _pure_python(text: str) -> str:
    return _redact_with(None, text)


def _scanned(text: str) -> str:
    return _redact_with(SCANNER, text)


def test_the_scanner_is_in_use_unless_forced_off() -> None:
    code = "from windowkeeper.core import secrets; print(secrets._SCANNER is None)"
    for value, off in (("1", "True"), ("0", "False"), ("", "False")):
        env = {hint_scan.FORCE_PURE_PYTHON: value, "PYTHONPATH": ":".join(sys.path)}
        done = subprocess.run(
            [sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True
        )
        assert done.stdout.strip() == off, value


@settings(max_examples=400, deadline=None)
@given(TEXTS, PADDING, TEXTS)
def test_scanned_positions_are_those_of_find_and_of_the_lowered_pieces(
    head: str, padding: int, tail: str
) -> None:
    text = head + "y" * padding + tail
    if secret_hints.has_folded_letters(text):
        return  # such a text takes the pure-Python path
    assert SCANNER is not None
    found = SCANNER.scan(text)
    for hint in EXACT:
        assert found.exact((hint,)) == secret_hints.positions(text, (hint,)), hint
    lowered = secret_hints.lowered_positions(text)
    if lowered is not None:
        assert found.lowered == lowered
    assert bool(found) == (any(h in text for h in EXACT) or bool(found.lowered))


@settings(max_examples=400, deadline=None)
@given(TEXTS, PADDING, TEXTS)
def test_redact_is_the_same_on_both_paths(head: str, padding: int, tail: str) -> None:
    text = head + "y" * padding + tail
    assert _scanned(text) == _pure_python(text)


@pytest.mark.parametrize(
    "text",
    [
        "tökén: x  password=hunter22 sk-abcdefghijklmnopqrstuvwx",
        "─" * 50
        + " Authorization: Bearer Zm9vYmFyYmF6cXV4MTIz "
        + "é" * 10_000
        + " DB_PASS=hunter22",
        "😀 --api-key=abcdef123 \ud800 https://u:pa55w0rd@github.com/x",
    ],
)
def test_non_ascii_texts_are_scanned_at_character_offsets(text: str) -> None:
    masked = _scanned(text)
    assert masked == _pure_python(text) and masked.count(secrets.REDACTED) >= 2


def test_each_thread_scans_with_its_own_scratch_space() -> None:
    import threading

    text = "x " * 5_000 + "password=hunter22 " + "sk-abcdefghijklmnopqrstuvwx " * 50
    expected = _pure_python(text)
    results: list[str] = []

    def run() -> None:
        results.extend(redact(text) for _ in range(20))

    active, secrets._SCANNER = secrets._SCANNER, SCANNER
    try:
        threads = [threading.Thread(target=run) for _ in range(4)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    finally:
        secrets._SCANNER = active
    assert results == [expected] * 80


def test_the_compiling_thread_keeps_the_scratch_other_threads_allocate_their_own() -> None:
    import threading

    scanner = hint_scan.HintScanner(exact=["password"], caseless=["token"])
    own = scanner._scratch_here()
    assert own is scanner._scratch and scanner._scratch_here() is own
    others: list[object] = []
    thread = threading.Thread(target=lambda: others.extend([scanner._scratch_here()] * 2))
    thread.start()
    thread.join()
    assert others[0] is others[1] and others[0] is not own
    found = scanner.scan("a token and a password")
    assert found.lowered == {"token": [2]} and found.exact(["password"]) == [14]


_WIDE = st.lists(
    st.sampled_from(["a", "é", "ÿ", "→", "😀", "\ud800", "\udfff", "?", " key=", "PASS", "--"])
).map("".join)


@settings(max_examples=200, deadline=None)
@given(head=_WIDE, length=st.integers(0, 3 * hint_scan._CHUNK), tail=_WIDE)
def test_a_text_encoded_in_slices_is_the_text_encoded_whole(
    head: str, length: int, tail: str
) -> None:
    # slices of _CHUNK characters: lengths around and across the slice size
    text = head + ("→é😀a" * length)[:length] + tail
    assert bytes(hint_scan._utf8(text)) == text.encode("utf-8", "surrogatepass")


LITERALS = hint_scan.LiteralScanner(["pass", "key", "://"]) if hint_scan.hyperscan else None
_HINT_PIECES = st.sampled_from(
    ["pass", "pa", "ss", "PASS", "P", "--", "-", "://", ":/", "/", "key", "KEY", "ke", "y"]
)


@settings(max_examples=400, deadline=None)
@given(st.lists(_HINT_PIECES | st.sampled_from(["é", "ÿ", "→", "😀", "\ud800", "?", " "])))
def test_hints_are_found_at_character_offsets_past_ascii(pieces: list[str]) -> None:
    # Scanned one byte per character (Latin-1, "?" past it): a character past ASCII
    # between two halves of a hint ("pa→ss") must not join them, and every offset is
    # the character's (what str.find returns), surrogates, "?" and all.
    text = "".join(pieces)
    assert SCANNER is not None
    found = SCANNER.scan(text)
    for hint in EXACT:
        assert found.exact((hint,)) == secret_hints.positions(text, (hint,)), hint
    lowered = secret_hints.lowered_positions(text)
    assert lowered is not None and found.lowered == lowered
    assert LITERALS is not None
    assert LITERALS.starts(text) == {
        at
        for word in ("pass", "key", "://")
        for at in secret_hints.positions(text.lower(), (word,))
    }
