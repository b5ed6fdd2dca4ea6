"""Who is calling: gateway keys and the scope that keeps one client's sessions its own.

With gateway keys configured, a request must present one — in ``X-Windowkeeper-Key``,
``x-api-key`` (the Anthropic SDK's header) or ``Authorization: Bearer`` (the OpenAI
SDK's) — and its scope is that key. The credential header that carried the key is not
forwarded upstream (the configured upstream key is sent instead, or the client's other
header). Without gateway keys the scope is the client's own credential, so clients with
different keys never share, see or reset each other's sessions: the token itself, in
whichever of those headers it came (``Authorization: Bearer sk-1`` and ``x-api-key: sk-1``
are one client), so the session GET accepts every header the README lists.

What must hold: keys are compared in constant time; a scope is a digest, never the key;
nothing here logs a credential.
"""

from __future__ import annotations

import hashlib
import hmac
from collections.abc import Mapping
from dataclasses import dataclass

KEY_HEADER = "x-windowkeeper-key"
_ORDER = (KEY_HEADER, "x-api-key", "authorization")


@dataclass(frozen=True)
class Caller:
    """An authenticated (or, without gateway keys, identified) client."""

    scope: str
    drop: frozenset[str] = frozenset()
    """Request headers that carried the gateway key (not forwarded)."""


def _digest(value: str) -> str:
    return hashlib.blake2b(value.encode("utf-8", "replace"), digest_size=12).hexdigest()


def _presented(headers: Mapping[str, str], name: str) -> str:
    value = headers.get(name, "").strip()
    if name == "authorization":
        scheme, _, token = value.partition(" ")
        return token.strip() if scheme.lower() == "bearer" else ""
    return value


def _matches(candidate: str, keys: frozenset[str]) -> bool:
    found = False
    for key in keys:  # every key is compared: the time does not tell which one matched
        found |= hmac.compare_digest(candidate.encode(), key.encode())
    return found


def authenticate(headers: Mapping[str, str], keys: frozenset[str]) -> Caller | None:
    """The caller, or ``None`` when gateway keys are configured and none was presented."""
    if not keys:
        token = next(filter(None, (_presented(headers, n) for n in _ORDER)), "")
        # Another scheme (Basic, ...) is a credential too: the whole header scopes it.
        return Caller("c" + _digest(token or headers.get("authorization", "")))
    for name in _ORDER:
        candidate = _presented(headers, name)
        if candidate and _matches(candidate, keys):
            return Caller("k" + _digest(candidate), frozenset({name}))
    return None
