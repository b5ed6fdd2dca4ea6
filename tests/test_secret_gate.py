"""The gate in front of secret masking (core/secret_gate.py): each rule's condition holds
wherever the rule's regex matches, and masking through the gate gives what the
pure-Python path gives, on generated text built to make the rules match."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from test_redact import POSITIVES
from test_secret_hints import FRAGMENTS, PADDING
from windowkeeper.core import hint_scan, secret_gate, secret_hints, secrets

pytestmark = pytest.mark.skipif(hint_scan.hyperscan is None, reason="no hyperscan wheel")
# Built here, not taken from secrets: under WINDOWKEEPER_PURE_PYTHON_SCAN=1 it has none.
GATE = secret_gate.SecretGate() if hint_scan.hyperscan else None
SCANNER = hint_scan.HintScanner(
    {h for r in secrets._RULES if not r.insensitive for h in r.hints} | set(secrets._ENV_HINTS),
    secret_hints.LOWERED_HINTS,
) if hint_scan.hyperscan else None  # fmt: skip

# Pieces of what each rule matches: key words with separators and values, white space
# Python's \s takes and Hyperscan's does not (\x1c, U+00A0, U+2003, U+0085), the
# characters a value may not hold, long runs for the tokens' lengths.
_MATCHING = [
    *("password", "passwd", "passphrase", "api_key", "apikey", "access-key", "private_key"),
    *("client_secret", "auth_token", "credentials", "credential", "CREDENTIALS", "DB_"),
    *("API_KEY", "_PASSWORD", "SECRET_", "--api-key", "--client-secret", "--passwd", "--my-"),
    *(": ", "=", " = ", '\\"', "'", "\\", "\x1c", "\u00a0", "\u2003", "\u0085", "\t"),
    *("Bearer ", "authorization: ", 'Authorization"=', "basic ", "token ", "://u", ":pw"),
    *("@host", "@[::1]", "-----BEGIN RSA PRIVATE KEY-----", "hooks.slack.com/services/T0"),
    *("sk-ant-", "sk-proj-", "sk_live_", "rk_test_", "ghp_", "eyJhbGciOiJIUzI1NiJ9", ".eyJ"),
    *("abcdefghijklmnopqrst", "ABCDEFGHIJ", "0123456789", "-_-_", "hunter22", ";", ",", "}"),
]
TEXTS = st.lists(
    st.sampled_from(FRAGMENTS + _MATCHING)
    | st.text(st.characters(blacklist_characters="ſı"), max_size=3),
    max_size=30,
).map("".join)


def _with(scanner: object, gate: object, text: str) -> str:
    active = secrets._SCANNER, secrets._GATE
    secrets._SCANNER, secrets._GATE = scanner, gate  # type: ignore[assignment]
    try:
        return secrets.redact(text)
    finally:
        secrets._SCANNER, secrets._GATE = active


@settings(max_examples=1_500, deadline=None)
@given(TEXTS)
def test_each_rule_that_matches_passes_its_condition(text: str) -> None:
    if secret_hints.has_folded_letters(text):
        return  # such a text takes the pure-Python path, never the gate
    assert GATE is not None
    found = GATE.candidates(text)
    for index, rule in enumerate(secrets._RULES):
        if rule.pattern.search(text) is not None:
            assert index in found, (rule.pattern.pattern, text)


@settings(max_examples=1_000, deadline=None)
@given(TEXTS, PADDING, TEXTS)
def test_masking_through_the_gate_is_the_pure_python_masking(
    head: str, padding: int, tail: str
) -> None:
    text = head + "y" * padding + tail
    assert _with(SCANNER, GATE, text) == _with(None, None, text)


@pytest.mark.parametrize(("text", "secret"), POSITIVES)
def test_every_known_secret_passes_the_gate(text: str, secret: str) -> None:
    assert GATE is not None
    assert GATE.candidates(text)
    assert secret not in _with(SCANNER, GATE, text)


@pytest.mark.parametrize(
    "text",
    [
        "the api key and the token count --verbose https://example.com/a@b",
        "max_tokens=4096 KEYS are listed; pass the secret word to auth.login()",
        "git log --oneline -- src/ && echo PWD é ─ 😀",
        "",
    ],
)
def test_ordinary_text_with_hints_is_ruled_out(text: str) -> None:
    # Each of these holds hints of several rules: the hint scan would try them all.
    assert GATE is not None
    assert GATE.candidates(text) == frozenset()


_SEPARATORS = st.sampled_from([" ", "\n", " é ", " ─ ", " 😀 ", "; ", "\t"])


@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from([text for text, _ in POSITIVES]), min_size=2, max_size=5),
       _SEPARATORS)  # fmt: skip
def test_each_secret_of_a_text_is_masked_after_another_rule_changed_it(
    texts: list[str], separator: str
) -> None:
    # After a rule changes a text the gate is asked again of the new text, and only the
    # later rules it names are tried: a text with secrets of several rules (ASCII and
    # not) is masked as the pure-Python path masks it, every secret gone.
    text = separator.join(texts)
    masked = _with(SCANNER, GATE, text)
    assert masked == _with(None, None, text)
    assert all(secret not in masked for known, secret in POSITIVES if known in texts)
