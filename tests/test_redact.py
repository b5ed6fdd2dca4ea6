"""Secret redaction: what must go, what must stay, and that it is fast."""

from __future__ import annotations

import base64

import pytest

from windowkeeper.summary.redact import REDACTED, redact

POSITIVES = [
    ("key sk-abcdefghijklmnopqrstuvwx end", "sk-abcdefghijklmnopqrstuvwx"),
    ("sk-ant-api03-abcdefghijklmnopqrstuv", "abcdefghijklmnopqrstuv"),
    ("token ghp_abcdefghijklmnopqrstuvwxyz0123", "ghp_abcdefghijklmnopqrstuvwxyz0123"),
    ("gho_abcdefghijklmnopqrstuvwxyz0123", "gho_abcdefghijklmnopqrstuvwxyz0123"),
    ("ghs_abcdefghijklmnopqrstuvwxyz0123", "ghs_abcdefghijklmnopqrstuvwxyz0123"),
    ("github_pat_11ABCDEFG0123456789_abcdefghij", "11ABCDEFG0123456789"),
    ("xoxb-1234567890-abcdefghij", "xoxb-1234567890"),
    ("aws AKIAIOSFODNN7EXAMPLE", "AKIAIOSFODNN7EXAMPLE"),
    ("AIzaSyA1234567890abcdefghijklmnopqrstuv", "AIzaSyA1234567890"),
    ("glpat-abcdefghijklmnopqrst", "glpat-abcdefghijklmnopqrst"),
    ("hf_abcdefghijklmnopqrstuvwxyzABCDEF", "hf_abcdefghijklmnopqrstuvwxyzABCDEF"),
    ("Authorization: Bearer eyJhbGciOiJIUzI1NiJ9.abc.def", "eyJhbGciOiJIUzI1NiJ9"),
    ("curl -H 'Authorization: Basic dXNlcjpwYXNz'", "dXNlcjpwYXNz"),
    ("use Bearer abcdefghijkl123 here", "abcdefghijkl123"),
    ("DB_PASSWORD=hunter22", "hunter22"),
    ('{"password": "hunter 2"}', "hunter 2"),
    ("password: hunter22", "hunter22"),
    ("passwd: hunter22", "hunter22"),
    ("client_secret = 'abcdef123456'", "abcdef123456"),
    ("mysql --password hunter22 -u root", "hunter22"),
    ("tool --api-key=abcdef123", "abcdef123"),
    ("postgresql://u:hunter2@db/x", "hunter2"),
    ("redis://:s3cretpw@cache:6379/0", "s3cretpw"),
    ("https://user:pa55w0rd@github.com/org/repo.git", "pa55w0rd"),
    ("export GITHUB_TOKEN=abc123456abcdef", "abc123456abcdef"),
    ("https://example.com/cb?token=abc123xyz&x=1", "abc123xyz"),
    ("x-api-key: abcdef12345", "abcdef12345"),
    ("-----BEGIN RSA PRIVATE KEY-----\nMIIEabc\n-----END RSA PRIVATE KEY-----", "MIIEabc"),
    ("-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXk", "b3BlbnNzaC1rZXk"),
]

NEGATIVES = [
    "commit 3f2a9c1d8e7b6a5f4e3d2c1b0a9f8e7d6c5b4a39 fixed the bug",
    "/home/user/.ssh/id_rsa and src/task-manager/disk-usage.py",
    "max_tokens=4096 prompt_tokens: 12 completion_tokens=3",
    "def f(token: str) -> None:",
    "password = os.environ['DB_PASS']",
    "password=${DB_PASSWORD}",
    "PWD=/work/main",
    "the token count is large and the password policy is strict",
    "http://localhost:8080/v1/models",
    "risk-assessment-for-the-quarterly-review-document",
    "secretary: Jane",
    "--token-file /tmp/t --password-stdin",
    "pip install scikit-learn",
    "Bearer tokens are documented in RFC 6750.",
]


@pytest.mark.parametrize(("text", "secret"), POSITIVES)
def test_secrets_are_redacted(text: str, secret: str) -> None:
    result = redact(text)
    assert secret not in result
    assert REDACTED in result
    assert redact(result) == result  # idempotent


@pytest.mark.parametrize("text", NEGATIVES)
def test_ordinary_text_is_kept(text: str) -> None:
    assert redact(text) == text


def test_context_around_secrets_is_kept() -> None:
    text = "connect to postgresql://app:hunter2@db.internal:5432/main then run migrations"
    assert redact(text) == (
        "connect to postgresql://app:[REDACTED]@db.internal:5432/main then run migrations"
    )
    assert redact("") == ""


def test_non_ascii_text() -> None:
    text = "İstanbul şifre: password=gizli123 ✓ 日本語"
    assert redact(text) == "İstanbul şifre: password=[REDACTED] ✓ 日本語"


def _b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).decode().rstrip("=")


_SIGNATURE = "AbCdEfGhIjKlMnOpQrStUvWxYz0123456789abcd"


@pytest.mark.parametrize(
    "payload",
    ["HEADUSERxAbCdEfGhIjKlMnOpQrStUvWxYz01234", _b64url(b"plain text, not json"), ""],
    ids=["opaque", "text", "detached"],
)
def test_a_jws_is_masked_whatever_its_payload(payload: str) -> None:
    """JWS compact form (RFC 7515): a header that decodes to JSON naming ``alg``, then
    the payload (anything, empty when detached) and the signature (issue 25 point 3)."""
    header = _b64url(b'{"alg":"RS256","kid":"k1"}')
    token = f"{header}.{payload}.{_SIGNATURE}"
    masked = redact(f"the session cookie was {token} then")
    assert masked == f"the session cookie was {REDACTED} then"
    assert redact(masked) == masked


@pytest.mark.parametrize(
    "header",
    [
        _b64url(b'{"typ":"JWT","kid":"k1"}'),  # JSON, but no alg: not a JWS header
        _b64url(b'{"alg" oops not json'),
        "eyJ" + "x" * 14,  # 17 characters: cannot be decoded as base64url at all
        _b64url(b'{"a":' + b"[" * 5_000 + b"]" * 5_000 + b"}"),  # hostile nesting
    ],
    ids=["no_alg", "not_json", "not_base64", "deep"],
)
def test_a_dotted_token_whose_header_is_not_a_jws_header_is_kept(header: str) -> None:
    text = f"value {header}.HEADUSERxAbCdEfGhIjKlMnOpQrStUvWxYz01234.{_SIGNATURE} end"
    assert redact(text) == text
