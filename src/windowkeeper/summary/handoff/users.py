"""What the user said: the task, the newest request, every user message, and the
constraints and preferences they stated (design §5 sections 1-3), all verbatim.

Only what a user wrote counts (:func:`~windowkeeper.analysis.kinds.user_text`): harness
notifications, interrupt markers, pasted summaries and injected documents are not user
messages. Constraints are whole sentences that state a rule, a ban, a preference, an
exact value or a decision with its reason; once recorded they are pinned (carried in
every later handoff, oldest first).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

from ...analysis.facts import (
    caseless_search,
    clued_items,
    dedupe,
    folded,
    rule_sentences,
    word_clues,
)
from ...analysis.instructions import excerpt
from ...analysis.kinds import live_text
from ...analysis.record import MessageFacts
from ...compaction.plan import message_handle
from .model import Quote

_FENCED = re.compile(r"```.*?(?:```|\Z)", re.DOTALL)

QUOTE_CHARS = 2_400
"""A user message longer than this is quoted by its head and tail (with its handle)."""
TASK_CHARS = 4_000
"""The original task is quoted whole up to this length, else head and tail."""
CONSTRAINT_CHARS = 400
MAX_PER_MESSAGE = 8
MAX_CONSTRAINTS = 48


@dataclass(frozen=True)
class UserTurn:
    """A message a user wrote: its position in the turns, text and archive handle."""

    position: int
    text: str
    handle: str
    raw: str = ""
    """The message's whole text as sent (notification wrappers included)."""


def user_turns(facts: Sequence[MessageFacts]) -> list[UserTurn]:
    """The messages of ``facts`` a user wrote, in order (images count as ``[image]``)."""
    found = []
    for position, record in enumerate(facts):
        if record.role != "user":
            continue
        text = written_text(record)
        if text:
            raw = live_text(record.message)
            found.append(UserTurn(position, text, message_handle(record), raw))
    return found


def written_text(record: MessageFacts) -> str:
    """What the user wrote in a message, its images as ``[image]``; computed once per
    message (the text alone is the record's :attr:`~MessageFacts.user_text`)."""
    text: str = record.remember("written", lambda: _written(record))
    return text


def _written(record: MessageFacts) -> str:
    text = record.user_text
    content = record.message.get("content")
    images = 0
    if isinstance(content, list):
        images = sum(1 for p in content if isinstance(p, dict) and "text" not in p)
    return " ".join([text, *["[image]"] * images]).strip() if images else text


def task_quote(turn: UserTurn) -> Quote:
    """The original task, verbatim as it was sent (wrappers included, so it reads as the
    user saw it), unless cutting that to its head and tail would lose the request."""
    if turn.raw and turn.raw != turn.text:
        whole = quoted(UserTurn(turn.position, turn.raw, turn.handle), TASK_CHARS)
        if turn.text[:80] in whole.text:
            return whole
    return quoted(turn, TASK_CHARS)


def quoted(turn: UserTurn, limit: int = QUOTE_CHARS) -> Quote:
    """A user message verbatim, or, when it is longer than ``limit``, its excerpt: head
    and tail, with the instruction lines of the part between (a pasted log's request)."""
    text = turn.text
    if len(text) <= limit:
        return Quote(text, turn.handle)
    return Quote(excerpt(text, limit), turn.handle, True)


# --- constraints -------------------------------------------------------------------------

# Rules, bans and preferences (the words a rule is stated with), and decisions the user
# made, with their loosened clue for a fast pre-scan (see analysis.facts.clued_items).
_RULE = re.compile(
    r"\b(?:must(?:n'?t)?|never|always|don'?t|do not|does not need|should(?:n'?t)?|prefer"
    r"|preferably|avoid|only|make sure|ensure|required?|cannot|can'?t|no need|not allowed"
    r"|forbidden|under no circumstances|keep|stick to|instead of|rather than|from now on"
    r"|going forward|let'?s (?:use|go with|keep|stick)|we(?:'ll| will) (?:use|go with|keep)"
    r"|I(?:'ve| have)? decided|decided to|go with|because|so that|since we)\b",
    re.IGNORECASE,
)
_BAN = re.compile(
    r"\b(?:never|don'?t|do not|must not|mustn'?t|cannot|can'?t|not allowed|forbidden"
    r"|under no circumstances|avoid)\b",
    re.IGNORECASE,
)
_OBLIGATION = re.compile(r"\b(?:must|always|make sure|ensure|required?|minimal)\b", re.I)
# Each searched lowered in ASCII text (facts.caseless_search: the same answer, faster).
_rule, _ban, _obligation = map(caseless_search, (_RULE, _BAN, _OBLIGATION))
# Tags a harness wraps a task in (``<pr_description>``, ``</instructions>``) at either end
# of a sentence are no part of it.
_MARKUP_ENDS = re.compile(r"^(?:\s*</?[A-Za-z][\w-]*>)+\s*|(?:\s*</?[A-Za-z][\w-]*>)+\s*$")
_CLUES = word_clues(
    "must", "never", "always", "don", "do not", "does not need", "should", "prefer",
    "avoid", "only", "make sure", "ensure", "require", "cannot", "can't", "can’t",
    "no need", "not allowed", "forbidden", "circumstances", "keep", "stick", "instead",
    "rather", "from now", "going forward", "let", "we'll", "we will", "decided", "go with",
    "because", "so that", "since we",
)  # fmt: skip
# Preferences, bans and decisions stated without a rule word: "I'd rather ...", "tabs,
# not spaces", "leave X alone", "no force pushes", "I chose X over Y", "we settled on ...".
# Weaker evidence than a rule word, so such sentences only take the slots a message's
# rules and values left (see constraints_of). Lower case, matched against the folded
# sentence (analysis.facts.folded): the same matches as IGNORECASE, at a third of the cost.
_SOFT = re.compile(
    r"\b(?:rather|preference|stick with|let(?:['’]?s| us) not|let us|skip|decided"
    r"|we(?:['’]ll| will) switch|we(?:['’]re| are) going to|going with|went with|the plan is"
    r"|leave \S+(?: \S+){0,3} as (?:it is|they are|is)|decision|go for|i['’]?d like"
    r"|i would like"
    r"|i (?:really )?(?:like|love|want|hate|dislike)|favou?r|nicer|better (?:to|than|if)"
    r"|leave \S+(?: \S+){0,3} alone|stay away|hands off|off[- ]limits|refrain"
    r"|stop (?:using|doing|adding|changing)|(?<!or )may not|chose|choose|picked|opted"
    r"|settled on|switch(?:ing)? to)\b"
    r"|, ?not\b|\bplease,? not\b"
    r"|^no (?!problem|worries|thanks|idea|luck|way|wonder)\w+\s+\w+"
    r"|^(?:please\s+)?use\b"
)
_SOFT_CLUES = word_clues(
    "rather", "preference", "stick with", "let", "we'", "we’", "we will", "we are",
    "decision", "go for", "like", "love", "want", "hate", "favo", "nicer", "better", "alone",
    "stay away", "hands off", "limits", "refrain", "stop", "may not", "chose", "choose",
    "picked", "opted", "settled", "switch", ", not", ",not", "no ", "use", "please", "skip",
    "leave", "going with", "went with", "decided", "the plan is",
)  # fmt: skip
# An exact value stated in prose (_has_value): a number with two or more digits, a
# version, a port, a quoted string, a path, an identifier with digits or underscores, a
# URL; with a word of relation (_VALUE_RELATION). Also values (_states_value): an e-mail
# address or a name with a digit in it (_MORE_VALUE), a count with its bound ("at most 5",
# _BOUND), a setting stated in words (_SETTING).
# The value's shapes are searched one by one, each behind a literal it holds (None: none
# needed): as one alternation the regex engine had no first character to skip ahead to (a
# letter may start an identifier) and tried every shape at every position of a sentence.
# A path starts a word, at the start or after a space: the look-behind comes after the
# first character, so the engine skips ahead to the characters a path starts with.
_VALUE_SHAPES: tuple[tuple[str | None, re.Pattern[str]], ...] = (
    (None, re.compile(r"\d{2,}|\d+\.\d+")),
    ("`", re.compile(r"`[^`\n]{1,80}`")),
    ('"', re.compile(r"\"[^\"\n]{2,80}\"")),
    ("'", re.compile(r"'[^'\n]{2,80}'")),
    ("http", re.compile(r"https?://")),
    (None, re.compile(r"[~./](?<!\S[~./])[\w./-]+")),
    ("_", re.compile(r"\b[a-z]+_[a-z0-9_]+\b|\b[A-Z][A-Z0-9]+_[A-Z0-9_]+\b")),
)
_VALUE_RELATION = re.compile(
    r"\b(?:is|are|=|to|be|use|uses|using|set|called|named|at|on|port|version|value)\b|[:=]",
    re.IGNORECASE,
)
_DIGIT_OR_AT = re.compile(r"[\d@]")
_MORE_VALUE = re.compile(r"@[\w-]+\.[\w.-]+|[A-Za-z][_-]?\d")  # after _DIGIT_OR_AT
# A bounded count is a value with its relation (lower case, for the folded sentence).
_BOUND = re.compile(
    r"\b(?:at most|at least|up to|no more than|exactly|max(?:imum)?|min(?:imum)?)\s+\d"
)
# A setting stated in words, with no digit or path to give it away: "the default branch
# is develop", "our package manager is pnpm", "the customer is Acme Corp" (lower case, for
# the folded sentence).
_SETTING = re.compile(
    r"\b(?:the|our|my|its|their)\s+(?:[\w-]+\s+){0,3}?(?:names?|branch|port|host(?:name)?"
    r"|server|endpoint|url|domain|path|dir(?:ectory)?|folder|key|token|user(?:name)?|account"
    r"|owner|e-?mail|address|password|version|release|region|zone|bucket|database|db|schema"
    r"|table|queue|topic|channel|cluster|namespace|project|repo(?:sitory)?|org(?:anization)?"
    r"|team|env(?:ironment)?|model|provider|framework|runner|manager|language|locale|style"
    r"|guide|convention|timezone|encoding|format|level|mode|default|target|timeout|deadline"
    r"|currency|prefix|suffix|tag|label|id|image|registry|customer|client)(?:\s+[\w-]+){0,3}?"
    r"\s+(?:is|are|(?:should|must|will) be)\s+(?!not\b|that\b|what\b|why\b|how\b)\S",
)
# "Can you ...?" is how many users state a rule ("Could you keep the API unchanged?");
# "Would you rather/like ...?" asks the agent's preference.
_POLITE_REQUEST = re.compile(
    r"^(?:please[,\s]+)?(?:can|could|would|will) you\s+(?!rather|like|prefer|want|mind)",
    re.IGNORECASE,
)
# Where a request for work goes on to a clause of its own.
_LATER_CLAUSE = re.compile(r",\s*(?:but|and)\s+|;\s*|\s+but\s+|\s+-+\s+|:\s+", re.IGNORECASE)
# "Please <verb> ..." and "Can you <verb> ..." ask for work; they state no rule.
_TASK_ASK = re.compile(
    r"^(?:(?:can|could|would|will) you\s+(?:please\s+)?|please\s+)"
    r"(?:fix|add|implement|write|create|run|check|look|update|help|investigate|find|read"
    r"|review|refactor|debug|build|test|continue|proceed|go|do|start|try|explain|summari[sz]e"
    r"|show|open|deploy|install|remove|delete|rename|move|port|migrate|resolve|handle|finish"
    r"|change|modify|edit|set up|setup)\b",
    re.IGNORECASE,
)


def constraints_of(texts: Iterable[str]) -> list[str]:
    """Sentences of user texts that state a rule, preference, exact value or decision."""
    found: list[str] = []
    for text in texts:
        if "```" in text or len(text) > 20_000:
            text = _FENCED.sub("\n", text[:20_000])
        candidates = [s for s in rule_sentences(text) if 8 <= len(s) <= CONSTRAINT_CHARS]
        rules = [s for s in clued_items(candidates, _CLUES) if _states(_rule, s)]
        values = [s for s in candidates if _states_value(s) and s not in rules]
        chosen = dedupe(strongest_first(rules) + values)
        if len(chosen) < MAX_PER_MESSAGE:  # the softer forms only fill the slots left
            rest = [s for s in candidates if s not in chosen]
            soft = [s for s in clued_items(rest, _SOFT_CLUES) if _states(_soft, s)]
            chosen = dedupe(chosen + soft)
        kept = set(chosen[:MAX_PER_MESSAGE])
        ordered = (s for s in dict.fromkeys(candidates) if s in kept)  # in the text's order
        found.extend(_MARKUP_ENDS.sub("", s) or s for s in ordered)
    return dedupe(found)


# The sentence of a task that says what the work may change ("Your task is specifically
# to make changes to non-test files in /testbed"): no rule word, yet the first rule.
_SCOPE = re.compile(
    r"\b(?:your|the) (?:task|job|assignment) (?:here )?is (?:specifically |only |simply )?to\b",
    re.IGNORECASE,
)
_scope = caseless_search(_SCOPE)


_PURPOSE = re.compile(r"(?<=\w) (?:in order to|so that|so as to) ", re.IGNORECASE)
_INNER_TAG = re.compile(r"\s*</?[A-Za-z][\w-]*>")


def task_scope(text: str) -> list[str]:
    """The sentences of a task text that say what the task is to change (its scope)."""
    if not _scope(text[:20_000]):
        return []
    found = [s for s in rule_sentences(text[:20_000]) if _scope(s)]
    # A harness's tag glued on ("... codebase. <IMPORTANT>This is ...") is no part of it.
    found = [_INNER_TAG.split(_MARKUP_ENDS.sub("", s), maxsplit=1)[0].strip() for s in found]
    # What to change and where is said first; the purpose after it is the task's own.
    found = [_PURPOSE.split(s, maxsplit=1)[0].rstrip(" ,") for s in found]
    return [s for s in found if 8 <= len(s) <= CONSTRAINT_CHARS]


def strongest_first(rules: list[str]) -> list[str]:
    """``rules`` with the bans first, then the obligations, then the rest (each in the
    text's order): when a long message (a task with its instructions) states more rules
    than a message keeps, the ones a continuing agent must not break are kept."""
    return sorted(rules, key=_strength)


def _strength(rule: str) -> int:
    if _ban(rule):
        return 0
    return 1 if _obligation(rule) else 2


def _states(found: Callable[[str], object], sentence: str) -> bool:
    """Whether ``sentence`` states what ``found`` recognizes (a rule, or a softer one).
    A request for work states one only in a later clause ("Please fix it, but never push
    to main"): a rule word inside the request ("the test that always fails") is not one."""
    if _asks(sentence) or not found(sentence):
        return False
    if not _TASK_ASK.match(sentence):
        return True
    clauses = _LATER_CLAUSE.split(sentence, maxsplit=1)
    return len(clauses) == 2 and bool(found(clauses[1]))


def _soft(sentence: str) -> bool:
    return _SOFT.search(folded(sentence)) is not None


def _asks(sentence: str) -> bool:
    """A question, unless it is a request put as one ("Could you avoid ...?")."""
    return sentence.endswith("?") and not _POLITE_REQUEST.match(sentence)


def _states_value(sentence: str) -> bool:
    if sentence.endswith("?") or len(sentence) > 240:
        return False
    gated = _DIGIT_OR_AT.search(sentence) is not None
    valued = _has_value(sentence) or (gated and _MORE_VALUE.search(sentence))
    if valued and _relates(sentence):
        return True
    probe = folded(sentence)
    return bool(gated and _BOUND.search(probe)) or _SETTING.search(probe) is not None


def _has_value(sentence: str) -> bool:
    """Whether one of ``_VALUE_SHAPES`` occurs in ``sentence``."""
    return any(
        (hint is None or hint in sentence) and shape.search(sentence) is not None
        for hint, shape in _VALUE_SHAPES
    )


_relates = caseless_search(_VALUE_RELATION)
"""Whether ``_VALUE_RELATION`` occurs in a sentence (~10× faster lowered, in ASCII)."""


def merged_constraints(previous: Sequence[str], new: Iterable[str]) -> tuple[str, ...]:
    """Pinned constraints: the earlier ones first, in order, then the new ones; over the
    cap the newest new ones wait (the oldest are never evicted)."""
    merged = dedupe([*previous, *new])
    return tuple(merged[: max(MAX_CONSTRAINTS, len(previous))])
