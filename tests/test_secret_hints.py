"""The fast path of secret masking skips a rule only where it cannot match.

``redact`` gates each rule with cheap tests (``core/secret_hints.py``, the ``starts`` of
the rules); these properties compare it, on generated text full of hint fragments, with
a reference that has no gates at all: each rule's pattern run over the whole text.
"""

from __future__ import annotations

import re

from hypothesis import given, settings
from hypothesis import strategies as st

from windowkeeper.core import secret_hints, secrets
from windowkeeper.core.secrets import redact

FRAGMENTS = [
    *("sk-", "sk_", "rk_", "ghp_", "ghs_", "gh", "github_pat_", "hf_", "whsec_", "npm_"),
    *("xox", "xoxb-", "xoxz-", "xapp-", "glpat-", "pypi-AgE", "AKIA", "ASIA", "AIza"),
    *("eyJ", ".", "--", "-", "=", ":", "://", "@", "/", "'", '"', "\\", "\n", " ", "_"),
    *("PASS", "PWD", "SECRET", "TOKEN", "KEY", "CRED", "AUTH", "pass", "Pass", "word"),
    *("secret", "Token", "api", "API", "key", "access", "private", "client", "auth"),
    *("cred", "entials", "Authorization", "bearer", "Bearer", "Basic", "hooks.slack.com/"),
    *("services/", "-----BEGIN ", "PRIVATE KEY-----", "-----END ", "é", "ß", "─", "😀"),
    *("\u212aEY", "to\u212aen"),
    *("İ", "Abc", "ABCDEFGHIJKLMNOP", "0123456789", "xxxxxxxx", "$", "{", ",", "str", "@db"),
]
# re's IGNORECASE takes ſ for "s" and ı for "i" where str.lower() does not: the
# case-insensitive rules look for their hints in lowered text (so "paſſword" is not a
# password to them, by design) while the reference's plain regex would find them.
TEXTS = st.lists(
    st.sampled_from(FRAGMENTS) | st.text(st.characters(blacklist_characters="ſı"), max_size=3),
    max_size=30,
).map("".join)
PADDING = st.sampled_from(
    [0, 0, 0, secret_hints.CHUNK - 9, secret_hints.CHUNK - 2, secret_hints.CHUNK + 5]
)


def _reference(text: str) -> str:
    """Every rule as one ``sub`` over the whole text, in order, with no hint or gate."""
    for rule in secrets._RULES:
        text = rule.pattern.sub(rule.replacement, text)
    return text


@settings(max_examples=400, deadline=None)
@given(TEXTS, PADDING, TEXTS)
def test_redact_equals_the_ungated_rules(head: str, padding: int, tail: str) -> None:
    # the padding puts the tail's hints across a lowered piece's boundary
    text = head + "y" * padding + tail
    assert redact(text) == _reference(text)


@settings(max_examples=400, deadline=None)
@given(TEXTS)
def test_a_token_gate_finds_every_hint_of_its_group(text: str) -> None:
    for group in secret_hints.TOKEN_GROUPS:
        present = [h for h in group.hints if h in text]
        if h_xox := [h for h in present if h == "xox"]:  # needs xox[abposr]- to match
            present.remove(h_xox[0])
            present += [h for h in ("xox",) if re.search("xox[abposr]-", text)]
        assert (group.gate.search(text) is not None) == bool(present), group.hints


@settings(max_examples=400, deadline=None)
@given(TEXTS.map(str.lower))
def test_a_lowered_gate_finds_every_hint_of_its_group(text: str) -> None:
    for group in secret_hints.LOWERED_GROUPS:
        present = any(hint in text for hint in group.hints)
        assert (group.gate.search(text) is not None) == present, group.hints


@given(TEXTS, PADDING, TEXTS)
def test_lowered_positions_are_those_of_each_hint_in_the_lowered_text(
    head: str, padding: int, tail: str
) -> None:
    text = head + "y" * padding + tail
    low = text.lower()
    found = secret_hints.lowered_positions(text)
    if len(low) != len(text):
        assert found is None
        return
    assert found is not None
    for hint in secret_hints.LOWERED_HINTS:
        expected = [m.start() for m in re.finditer(f"(?={re.escape(hint)})", low)]
        assert found.get(hint, []) == expected, hint
