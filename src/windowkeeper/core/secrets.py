"""Secret redaction for everything that reaches or leaves the summarizer (design §5).

Summaries persist and re-enter every later prompt, so a secret that slips into one is
repeated for the rest of the session. ``redact`` replaces credentials with
``[REDACTED]`` while leaving ordinary prose, git SHAs and file paths alone.

What must hold:
- idempotent: ``redact(redact(x)) == redact(x)``;
- fast: a few compiled regexes, each guarded by cheap tests (:mod:`.secret_hints`), so
  a 1 MB text without secrets costs a dozen or so C-level scans;
- conservative on keys: ``key=value`` assignments are only redacted for secret-like
  key names, and obvious non-values (type names, placeholders, env references) stay.
"""

from __future__ import annotations

import base64
import json
import re
from collections.abc import Callable, Container
from dataclasses import dataclass

from .alternation import word_alternation
from .hint_scan import Scanned, scanner
from .secret_gate import CONDITIONS, SecretGate
from .secret_hints import (
    LOWERED_HINTS,
    OVERLAP,
    TOKEN_GROUPS,
    HintSource,
    Lowered,
    has_folded_letters,
    word_start_of,
)

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
    r"|(?:sk|rk)_(?:live|test)_[A-Za-z0-9]{10,}"  # Stripe secret and restricted keys
    r"|whsec_[A-Za-z0-9]{16,}"  # Stripe webhook signing secret
    r"|xapp-[A-Za-z0-9-]{10,}"  # Slack app-level token
    r"|npm_[A-Za-z0-9]{30,}"
    r"|pypi-AgE[A-Za-z0-9_-]{20,}"
    r"|eyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}"  # a JWT, bare
    # any other JWS compact form (the payload may be anything, empty when detached): a
    # secret only when its header decodes to JSON naming "alg" (``_token``)
    r"|(?P<jws>eyJ[A-Za-z0-9_-]{8,})\.[A-Za-z0-9_-]*\.[A-Za-z0-9_-]{8,}"
    r")"
)
_TOKEN_HINTS = (
    "sk-", "ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_", "xox", "AKIA", "ASIA",
    "AIza", "glpat-", "hf_", "sk_", "rk_", "whsec_", "xapp-", "npm_", "pypi-", "eyJ",
)  # fmt: skip

# Slack incoming webhooks carry their secret in the path.
_SLACK_WEBHOOK = re.compile(r"(hooks\.slack\.com/(?:services|workflows|triggers)/)[\w/-]+")

_PRIVATE_KEY = re.compile(
    r"-----BEGIN [A-Z0-9 ]*PRIVATE KEY-----.*?(?:-----END [A-Z0-9 ]*PRIVATE KEY-----|\Z)",
    re.DOTALL,
)

# "Authorization: Bearer x", "Authorization: Basic x", a bare "Bearer <token>".
_AUTH_HEADER = re.compile(
    r"(?i)(authorization[\"']?\s*[:=]\s*[\"']?(?:bearer|basic|token)?\s*)([^\s\"',;\\]{6,})"
)
_BEARER = re.compile(r"(?i)(\bbearer\s+)([A-Za-z0-9._~+/=-]{8,})")

# Credentials inside URLs and connection strings: scheme://user:password@host. The
# password may hold any character but whitespace and quotes ('/', ':', '@' included): it
# runs to the last '@' that is followed by a host name and its end.
_URL_CREDENTIAL = re.compile(
    r"(://[^\s:/@\"'`]*:)([^\s\"'`]+?)(@)(?=[A-Za-z0-9.\-\[\]]+(?:[:/?#\s\"'`),;\]]|$))"
)
_PORT_AND_PATH = re.compile(r"\d{1,5}(?:/|$)")

_SECRET_KEY = (
    r"(?:password|passwd|passphrase|secret|token|api[_-]?key|apikey|access[_-]?key"
    r"|private[_-]?key|client[_-]?secret|auth[_-]?token|credentials?)"
)
# key = value / key: value / "key": "value" (env, YAML, JSON, INI, Python kwargs), also
# inside JSON-escaped text (\"password\": \"x\", as a ledger line quotes it).
_ASSIGNMENT = re.compile(
    r"(?i)(" + _SECRET_KEY + r"\\?[\"']?\s*[:=]\s*)"
    r"(?:(\\?[\"'])([^\"'\n]*?)\2|([^\s\"',;&}\])\\]+))"
)
# .env / shell lines: NAME=value where NAME is an upper-case variable naming a secret.
_ENV_LINE = re.compile(
    r"(?<![A-Za-z0-9_])((?:[A-Z][A-Z0-9]*_)*[A-Z0-9]*"
    r"(?:PASS|PASSWD|PASSWORD|PWD|SECRET|TOKEN|KEY|CREDENTIALS?|AUTH)(?:_[A-Z0-9]+)*"
    r"\s*=\s*)(?:([\"'])([^\"'\n]*)\2|([^\s\"'\\]+))"
)
_NOT_SECRET_NAMES = frozenset({"PWD", "OLDPWD", "KEY"})
# CLI flags: --password x, --api-key=x, --client-secret "x".
_FLAG = re.compile(
    r"(?i)(--(?:[a-z0-9]+-)*(?:password|passwd|secret|token|api-?key|access-key"
    r"|client-secret)(?:=|\s+))(?:([\"'])([^\"'\n]*)\2|([^\s\"'\\]+))"
)
# Every alternative of _SECRET_KEY starts with one of these (anchored matching needs it).
_KEY_HINTS = ("pass", "secret", "token", "api", "access", "private", "client", "auth", "cred")
# Every word _FLAG names starts with one of these.
_FLAG_WORDS = ("pass", "secret", "token", "api", "access", "client")
_ENV_HINTS = ("PASS", "PWD", "SECRET", "TOKEN", "KEY", "CRED", "AUTH")

# Values next to a secret-like key that are not secrets: type hints, placeholders,
# references to other variables, booleans/nulls and values already redacted.
_NOT_A_VALUE = frozenset(
    {
        "str", "string", "int", "bool", "bytes", "none", "null", "true", "false", "optional",
        "required", "secretstr", "any", "object", "list", "dict", "redacted", "***", "...",
        "<redacted>", "[redacted]", "xxx", "changeme", "=", "''", '""',
    }
)  # fmt: skip


_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)*")
_CODE = re.compile(r"[A-Za-z_$][\w$]*(?:\.[A-Za-z_$][\w$]*)*\(")
_NAME_HINTS = ("token", "key", "secret", "pass", "pwd", "auth", "cred")


def _is_placeholder(value: str) -> bool:
    stripped = value.strip()
    if len(stripped) < 3 or stripped.lower() in _NOT_A_VALUE:
        return True
    # env/template references ($DB_PASS, ${X}, {{ x }}, <your-key>) carry no secret
    if stripped[0] in "$<{%[(" or stripped.startswith("os.environ"):
        return True
    # code, not a value: a call (document.querySelector(…), os.getenv(…), getToken())
    if _CODE.match(stripped):
        return True
    # a variable passed on (token: csrfToken, password=user.password, api_key=API_KEY)
    return bool(_IDENTIFIER.fullmatch(stripped)) and any(
        hint in stripped.lower() for hint in _NAME_HINTS
    )


def _assignment(match: re.Match[str]) -> str:
    head, quote, quoted, bare = match.group(1), match.group(2), match.group(3), match.group(4)
    value = quoted if quote else bare
    if value is None or _is_placeholder(value):
        return match.group(0)
    return f"{head}{quote}{REDACTED}{quote}" if quote else f"{head}{REDACTED}"


def _token(match: re.Match[str]) -> str:
    header = match.group("jws")
    return REDACTED if header is None or _is_jws_header(header) else match.group(0)


def _is_jws_header(segment: str) -> bool:
    """Whether a base64url segment decodes to a JSON object naming ``alg`` (RFC 7515 §4)."""
    try:
        decoded = json.loads(base64.urlsafe_b64decode(segment + "=" * (-len(segment) % 4)))
    except (ValueError, RecursionError):  # binascii.Error, UnicodeDecodeError are ValueErrors
        return False
    return isinstance(decoded, dict) and "alg" in decoded


def _keep_group_1(match: re.Match[str]) -> str:
    return match.group(1) + REDACTED


def _url_credential(match: re.Match[str]) -> str:
    password = match.group(2)
    if password == REDACTED or _PORT_AND_PATH.match(password):  # host:port/path@x: no user
        return match.group(0)
    return f"{match.group(1)}{REDACTED}{match.group(3)}"


def _env_line(match: re.Match[str]) -> str:
    name = match.group(1).split("=")[0].strip()
    if name in _NOT_SECRET_NAMES:
        return match.group(0)
    return _assignment(match)


def _auth_header(match: re.Match[str]) -> str:
    if _is_placeholder(match.group(2)):
        return match.group(0)
    return match.group(1) + REDACTED


@dataclass(frozen=True)
class _Rule:
    """A pattern applied where one of its ``hints`` occurs.

    ``anchored`` rules are only tried at hint positions (each match starts with a
    hint, or with the word a hint is in when ``word_start``), which avoids running a
    slow alternation at every position of a large text; the others run as one ``sub``
    when any hint occurs at all (their patterns start with a literal, which the regex
    engine finds fast). ``starts``, when set, gives an anchored case-sensitive rule's
    positions instead of one scan per hint: it may leave out a position only where the
    pattern cannot match (the result then is the same, as only matches change text).
    """

    pattern: re.Pattern[str]
    replacement: Callable[[re.Match[str]], str] | str
    hints: tuple[str, ...]
    insensitive: bool = False
    anchored: bool = False
    word_start: bool = False
    starts: Callable[[str, HintSource], list[int]] | None = None


# The ``starts`` of the anchored case-sensitive rules: each leaves out only positions
# where its pattern provably cannot match, as said at each.


def _token_starts(text: str, lowered: HintSource) -> list[int]:
    # a group's hints begin no match where its gate finds nothing (secret_hints)
    return lowered.exact(text, lowered.token_hints(text))


def _url_starts(text: str, lowered: HintSource) -> list[int]:
    # the pattern holds a literal "@" after the "://"
    return lowered.exact(text, ("://",)) if "@" in text else []


def _flag_starts(text: str, lowered: HintSource) -> list[int]:
    # _FLAG needs one of its words, case-insensitively, right after a "-". Unless the
    # text holds a letter that IGNORECASE equates to an ASCII one but .lower() does not
    # lower to it, such a word lowered is in the lowered text: its hint is found there.
    found = lowered.of(text)
    if found is not None and not has_folded_letters(text):
        dashed = (text[at - 1 : at] == "-" for word in _FLAG_WORDS for at in found.get(word, ()))
        if not any(dashed):
            return []
    return lowered.exact(text, ("--",))


def _env_starts(text: str, lowered: HintSource) -> list[int]:
    if "=" not in text:  # the pattern holds a literal "=" after the name
        return []
    found = lowered.of(text)
    if found is None:
        return lowered.exact(text, _ENV_HINTS, word_start=True)
    # Lowering kept every position, so each occurrence of an upper-case hint is one
    # of its lower-cased hint's positions: the same positions as scanning for it.
    starts = {
        word_start_of(text, at)
        for hint in _ENV_HINTS
        for at in found.get(hint.lower(), ())
        if text.startswith(hint, at)
    }
    return sorted(starts)


_RULES: tuple[_Rule, ...] = (
    _Rule(_PRIVATE_KEY, REDACTED, ("PRIVATE KEY-----",)),
    _Rule(_TOKEN, _token, _TOKEN_HINTS, anchored=True, starts=_token_starts),
    _Rule(_AUTH_HEADER, _auth_header, ("authorization",), insensitive=True, anchored=True),
    _Rule(_BEARER, _keep_group_1, ("bearer",), insensitive=True, anchored=True),
    _Rule(_URL_CREDENTIAL, _url_credential, ("://",), anchored=True, starts=_url_starts),
    _Rule(_SLACK_WEBHOOK, _keep_group_1, ("hooks.slack.com/",)),
    _Rule(_FLAG, _assignment, ("--",), anchored=True, starts=_flag_starts),
    _Rule(_ASSIGNMENT, _assignment, _KEY_HINTS, insensitive=True, anchored=True),
    _Rule(_ENV_LINE, _env_line, _ENV_HINTS, anchored=True, word_start=True, starts=_env_starts),
)
# What the fast paths rely on: every case-insensitive hint is found in the lowered
# pieces, so is every upper-case hint of _ENV_LINE lowered, the token groups hold every
# token hint, and each hint fits the overlap.
assert all(h in LOWERED_HINTS for rule in _RULES if rule.insensitive for h in rule.hints)
assert all(h.lower() in LOWERED_HINTS for h in _ENV_HINTS)
assert sorted(h for group in TOKEN_GROUPS for h in group.hints) == sorted(_TOKEN_HINTS)
assert max(len(h) for rule in _RULES for h in rule.hints) - 1 == OVERLAP
assert max(len(h) for h in LOWERED_HINTS) - 1 <= OVERLAP


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


def _apply(rule: _Rule, text: str, lowered: HintSource) -> str:
    if rule.insensitive:
        found = lowered.of(text)
        if found is None:
            return rule.pattern.sub(rule.replacement, text)
        starts = sorted({at for hint in rule.hints for at in found.get(hint, ())})
        if not starts:
            return text
        if not rule.anchored:
            return rule.pattern.sub(rule.replacement, text)
        return _sub_anchored(rule, text, starts)
    if rule.starts is not None:
        return _sub_anchored(rule, text, rule.starts(text, lowered))
    if rule.anchored:
        return _sub_anchored(rule, text, lowered.exact(text, rule.hints, rule.word_start))
    if not lowered.occurs(text, rule.hints):
        return text
    return rule.pattern.sub(rule.replacement, text)


def redact(text: str, seen: dict[str, str] | None = None) -> str:
    """``text`` with API keys, tokens, passwords and private keys replaced by ``[REDACTED]``.

    ``seen``: texts masked before and what masking made of them (a caller's, for as long
    as it likes): a text the gate cannot rule out is looked up there first and added to
    it, as agents re-run the same commands and get the same outputs. Only those texts:
    hashing every text would cost more than the gate that rules most out."""
    if not text:
        return text
    lowered: HintSource
    tried: Container[int] = _EVERY_RULE
    gate = None
    if _SCANNER is not None and not has_folded_letters(text):
        gate = _GATE
        if gate is not None:
            tried = gate.candidates(text)  # the rules that may match (secret_gate)
            if not tried:
                return text
        lowered = Scanned(_SCANNER)  # every hint found in one pass (hint_scan)
    elif _holds_no_hint(text):
        return text
    else:
        lowered = Lowered()  # computed by the first rule that needs it
    if seen is None:
        return _masked(text, lowered, tried, gate)
    found = seen.get(text)
    if found is None:
        found = seen[text] = _masked(text, lowered, tried, gate)
    return found


def _masked(text: str, lowered: HintSource, tried: Container[int], gate: SecretGate | None) -> str:
    """:func:`redact` past its gates: the rules the gate left (``tried``), in order."""
    if isinstance(lowered, Scanned) and not lowered.at(text):
        return text
    for index, rule in enumerate(_RULES):
        # A rule whose condition fails on the text cannot change it, while it is the
        # text the gate saw; every rule's starts are positions of its hints.
        if index not in tried or not lowered.may_hold(text, rule.hints, rule.insensitive):
            continue
        new = _apply(rule, text, lowered)
        if new != text:
            text = new
            if gate is None:
                tried = _EVERY_RULE
            elif index < _LAST_RULE:
                # The gate holds for any text, so it is asked again of the changed one
                # (its pieces are the old text's and REDACTED: no folded letter either);
                # a later rule whose condition fails there is skipped, with no new
                # hint scan of the text.
                tried = gate.candidates(text)
    return text


# Most texts are short, and there the rules' own gates cost more in calls than in
# scanning: one search of every hint, lowered, in the lowered text rules them all out.
# Every rule needs a hint (a case-sensitive one lowered is in the lowered text), so
# where none occurs and lowering kept the length (the positions the case-insensitive
# rules would use are those of a lowered text then) no rule changes the text.
_SHORT = 256
_ANY_HINT = re.compile(word_alternation(h.lower() for r in _RULES for h in r.hints))


_SCANNER = scanner(
    exact={h for rule in _RULES if not rule.insensitive for h in rule.hints} | set(_ENV_HINTS),
    caseless=LOWERED_HINTS,
)


# What the gate needs: one condition per rule, in the rules' order.
assert len(CONDITIONS) == len(_RULES)
_GATE = SecretGate() if _SCANNER is not None else None
_EVERY_RULE = range(len(_RULES))
_LAST_RULE = len(_RULES) - 1


def _holds_no_hint(text: str) -> bool:
    if len(text) > _SHORT:
        return False
    low = text.lower()
    return len(low) == len(text) and _ANY_HINT.search(low) is None
