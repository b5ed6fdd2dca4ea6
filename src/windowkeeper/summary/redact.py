"""Secret redaction for everything that reaches or leaves the summarizer (SPEC §6).

Summaries persist and re-enter every later prompt, so a secret that slips into one is
repeated for the rest of the session. ``redact`` replaces credentials with
``[REDACTED]`` while leaving ordinary prose, git SHAs and file paths alone.

What must hold:
- idempotent: ``redact(redact(x)) == redact(x)``;
- fast: a few compiled regexes, each guarded by a cheap substring test, so a 1 MB
  text without secrets costs a handful of C-level scans;
- conservative on keys: ``key=value`` assignments are only redacted for secret-like
  key names, and obvious non-values (type names, placeholders, env references) stay.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

REDACTED = "[REDACTED]"

# Provider tokens with a recognisable prefix. The look-behind stops matches inside
# longer words ("task-..." never yields "sk-...").
_TOKEN = re.compile(
    r"(?<![A-Za-z0-9_-])(?:"
    r"sk-ant-[A-Za-z0-9_-]{16,}"
    r"|sk-(?:proj-|live-|test-|or-v1-)?[A-Za-z0-9_-]{16,}"
    r"|gh[pousr]_[A-Za-z0-9]{20,}"
    r"|github_pat_[A-Za-z0-9_]{20,}"
    r"|xox[abposr]-[A-Za-z0-9-]{10,}"
    r"|(?:AKIA|ASIA)[0-9A-Z]{16}"
    r"|AIza[0-9A-Za-z_-]{35}"
    r"|glpat-[A-Za-z0-9_-]{20,}"
    r"|hf_[A-Za-z0-9]{30,}"
    r")"
)
_TOKEN_HINTS = (
    "sk-", "ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_", "xox", "AKIA", "ASIA",
    "AIza", "glpat-", "hf_",
)  # fmt: skip

_PRIVATE_KEY = re.compile(
    r"-----BEGIN [A-Z0-9 ]*PRIVATE KEY-----.*?(?:-----END [A-Z0-9 ]*PRIVATE KEY-----|\Z)",
    re.DOTALL,
)

# "Authorization: Bearer x", "Authorization: Basic x", a bare "Bearer <token>".
_AUTH_HEADER = re.compile(
    r"(?i)(authorization[\"']?\s*[:=]\s*[\"']?(?:bearer|basic|token)?\s*)([^\s\"',;]{6,})"
)
_BEARER = re.compile(r"(?i)(\bbearer\s+)([A-Za-z0-9._~+/=-]{8,})")

# Credentials inside URLs and connection strings: scheme://user:password@host.
_URL_CREDENTIAL = re.compile(r"(://[^\s:/@]*:)([^\s@/]+)(@)")

_SECRET_KEY = (
    r"(?:password|passwd|passphrase|secret|token|api[_-]?key|apikey|access[_-]?key"
    r"|private[_-]?key|client[_-]?secret|auth[_-]?token|credentials?)"
)
# key = value / key: value / "key": "value" (env, YAML, JSON, INI, Python kwargs).
_ASSIGNMENT = re.compile(
    r"(?i)(" + _SECRET_KEY + r"[\"']?\s*[:=]\s*)"
    r"(?:([\"'])([^\"'\n]*)\2|([^\s\"',;&}\])]+))"
)
# CLI flags: --password x, --api-key=x, --client-secret "x".
_FLAG = re.compile(
    r"(?i)(--(?:[a-z0-9]+-)*(?:password|passwd|secret|token|api-?key|access-key"
    r"|client-secret)(?:=|\s+))(?:([\"'])([^\"'\n]*)\2|([^\s\"']+))"
)
# Every alternative of _SECRET_KEY starts with one of these (anchored matching needs it).
_KEY_HINTS = ("pass", "secret", "token", "api", "access", "private", "client", "auth", "cred")

# Values next to a secret-like key that are not secrets: type hints, placeholders,
# references to other variables, booleans/nulls and values already redacted.
_NOT_A_VALUE = frozenset(
    {
        "str", "string", "int", "bool", "bytes", "none", "null", "true", "false", "optional",
        "required", "secretstr", "any", "object", "list", "dict", "redacted", "***", "...",
        "<redacted>", "[redacted]", "xxx", "changeme", "=", "''", '""',
    }
)  # fmt: skip


def _is_placeholder(value: str) -> bool:
    stripped = value.strip()
    if len(stripped) < 3 or stripped.lower() in _NOT_A_VALUE:
        return True
    # env/template references ($DB_PASS, ${X}, {{ x }}, <your-key>) carry no secret
    return stripped[0] in "$<{%[(" or stripped.startswith("os.environ")


def _assignment(match: re.Match[str]) -> str:
    head, quote, quoted, bare = match.group(1), match.group(2), match.group(3), match.group(4)
    value = quoted if quote else bare
    if value is None or _is_placeholder(value):
        return match.group(0)
    return f"{head}{quote}{REDACTED}{quote}" if quote else f"{head}{REDACTED}"


def _keep_group_1(match: re.Match[str]) -> str:
    return match.group(1) + REDACTED


def _url_credential(match: re.Match[str]) -> str:
    if match.group(2) == REDACTED:
        return match.group(0)
    return f"{match.group(1)}{REDACTED}{match.group(3)}"


def _auth_header(match: re.Match[str]) -> str:
    if _is_placeholder(match.group(2)):
        return match.group(0)
    return match.group(1) + REDACTED


@dataclass(frozen=True)
class _Rule:
    """A pattern applied where one of its ``hints`` occurs.

    ``anchored`` rules are only tried at hint positions (each match starts with a
    hint), which avoids running a slow alternation at every position of a large text;
    the others run as one ``sub`` when any hint occurs at all.
    """

    pattern: re.Pattern[str]
    replacement: Callable[[re.Match[str]], str] | str
    hints: tuple[str, ...]
    insensitive: bool = False
    anchored: bool = False


_RULES: tuple[_Rule, ...] = (
    _Rule(_PRIVATE_KEY, REDACTED, ("PRIVATE KEY-----",)),
    _Rule(_TOKEN, REDACTED, _TOKEN_HINTS, anchored=True),
    _Rule(_AUTH_HEADER, _auth_header, ("authorization",), insensitive=True, anchored=True),
    _Rule(_BEARER, _keep_group_1, ("bearer",), insensitive=True, anchored=True),
    _Rule(_URL_CREDENTIAL, _url_credential, ("://",), anchored=True),
    _Rule(_FLAG, _assignment, ("--",)),
    _Rule(_ASSIGNMENT, _assignment, _KEY_HINTS, insensitive=True, anchored=True),
)


def _positions(haystack: str, hints: tuple[str, ...]) -> list[int]:
    found: set[int] = set()
    for hint in hints:
        index = haystack.find(hint)
        while index >= 0:
            found.add(index)
            index = haystack.find(hint, index + 1)
    return sorted(found)


def _replace(match: re.Match[str], replacement: Callable[[re.Match[str]], str] | str) -> str:
    return replacement if isinstance(replacement, str) else replacement(match)


def _sub_anchored(rule: _Rule, text: str, starts: list[int]) -> str:
    pieces: list[str] = []
    done = 0
    for start in starts:
        if start < done:
            continue
        match = rule.pattern.match(text, start)
        if match is None:
            continue
        pieces.append(text[done:start])
        pieces.append(_replace(match, rule.replacement))
        done = match.end()
    if not pieces:
        return text
    pieces.append(text[done:])
    return "".join(pieces)


def _apply(rule: _Rule, text: str, lowered: str) -> str:
    haystack = lowered if rule.insensitive else text
    if not any(hint in haystack for hint in rule.hints):
        return text
    # lower() can change the length of some non-ASCII text; positions would then drift
    if rule.anchored and len(haystack) == len(text):
        return _sub_anchored(rule, text, _positions(haystack, rule.hints))
    return rule.pattern.sub(rule.replacement, text)


def redact(text: str) -> str:
    """``text`` with API keys, tokens, passwords and private keys replaced by ``[REDACTED]``."""
    if not text:
        return text
    lowered = text.lower()
    for rule in _RULES:
        new = _apply(rule, text, lowered)
        if new != text:
            text, lowered = new, new.lower()
    return text
