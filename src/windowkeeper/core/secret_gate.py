"""Whether any secret rule can match a text at all: one Hyperscan pass (design §5).

Nearly every text the masking stage reads holds some hint of a rule ("key", "token",
"--", "://", "="), so finding each hint's positions and trying the rules there costs
Python work per hint and per rule on texts that hold no secret. Here each rule has a
*necessary condition*: a Hyperscan expression that matches wherever the rule's regex
could match (its look-behinds and value tails dropped, its character classes widened
to the bytes a wider class could be in UTF-8). A text in which none of them matches is
left as it is, with no hint scan; any other text takes the hint scan and the rules as
before, so the result is the same.

Why exact: rules change a text only where they match, and run in order on the text the
previous ones left. If no condition matches the original text, the first rule leaves it
unchanged, so the second sees the original, and so on: no rule changes it.

What must hold (``tests/test_secret_gate.py``, on generated text): each condition
matches wherever its rule's regex matches (scanned as bytes: ASCII, or UTF-8 for other
text, whose multi-byte characters are all bytes of 0x80 and above). Python's ``\\s`` in a
``str`` pattern takes Unicode white space, which in UTF-8 is such bytes or one of
``_SPACE``'s ASCII ones; case-insensitive conditions use Hyperscan's ASCII case folding,
so texts holding a letter that ``re.IGNORECASE`` folds onto an ASCII one
(``FOLDED_TO_ASCII``) never come here (see :func:`~.secrets.redact`).
"""

from __future__ import annotations

from .hint_scan import ConditionScanner

# Python's \s on UTF-8 bytes: the ASCII white space (\x1c-\x1f too: str.isspace takes
# them) and any byte of a multi-byte character.
_SPACE = r"[\t\n\x0b\x0c\r \x1c-\x1f\x80-\xff]"
_KEY_WORDS = (
    r"(?:pass(?:wd|word|phrase)|secret|token|api[_-]?key|apikey|access[_-]?key"
    r"|private[_-]?key|client[_-]?secret|auth[_-]?token|credentials?)"
)

# (expression, caseless) for each rule of secrets._RULES, in its order.
CONDITIONS: tuple[tuple[str, bool], ...] = (
    (r"-----BEGIN [A-Z0-9 ]*PRIVATE KEY-----", False),
    (
        r"(?:sk-[A-Za-z0-9_-]{16}|gh[pousr]_[A-Za-z0-9]{20}|github_pat_[A-Za-z0-9_]{20}"
        r"|xox[abposr]-[A-Za-z0-9-]{10}|(?:AKIA|ASIA)[0-9A-Z]{16}|AIza[0-9A-Za-z_-]{35}"
        r"|glpat-[A-Za-z0-9_-]{20}|hf_[A-Za-z0-9]{30}|(?:sk|rk)_(?:live|test)_[A-Za-z0-9]{10}"
        r"|whsec_[A-Za-z0-9]{16}|xapp-[A-Za-z0-9-]{10}|npm_[A-Za-z0-9]{30}"
        r"|pypi-AgE[A-Za-z0-9_-]{20}|eyJ[A-Za-z0-9_-]{8}[A-Za-z0-9_-]*\.[A-Za-z0-9_-]*\."
        r"[A-Za-z0-9_-]{8})",
        False,
    ),
    (r"authorization[\"']?" + _SPACE + r"*[:=]", True),
    (r"bearer" + _SPACE, True),
    (r"://[^:/@\"'`]*:[^\"'`]+@[A-Za-z0-9.\[\]-]", False),
    (r"hooks\.slack\.com/(?:services|workflows|triggers)/", False),
    (
        r"--(?:[a-z0-9]+-)*(?:passw(?:or)?d|secret|token|api-?key|access-key|client-secret)"
        r"(?:=|" + _SPACE + r")",
        True,
    ),
    (_KEY_WORDS + r"\\?[\"']?" + _SPACE + r"*[:=]", True),
    (r"(?:PASS|PWD|SECRET|TOKEN|KEY|CRED|AUTH)[A-Z0-9_]*" + _SPACE + r"*=", False),
)


class SecretGate(ConditionScanner):
    """The rules that may match a text, by their position in ``CONDITIONS``."""

    def __init__(self, conditions: tuple[tuple[str, bool], ...] = CONDITIONS) -> None:
        super().__init__(conditions)

    # The positions of the rules whose condition matches a text (each at most once:
    # single-match expressions report their first match only).
    candidates = ConditionScanner.matching
