"""Key decisions with their reasons (design §5 section 6): the choices and findings the
agent stated, the newest kept (with a focus topic, the ones about it kept longest).
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from ...analysis.facts import (
    Clues,
    clued_items,
    collapse,
    dedupe,
    item_sentences,
    paragraphs,
    prose,
)

MAX_DECISIONS = 16
_DECISION = re.compile(
    r"\b(?:decided|decide to|instead of|rather than|the fix (?:is|was|will be)|root cause"
    r"|(?:I'll|I will|we'll|we will|let's) (?:use|go with|switch|keep|avoid|replace)"
    r"|going with|opted|chose|chosen|the (?:bug|problem|issue|culprit) (?:is|was|lives)"
    r"|turns out|so only|because|(?:doesn't|does not|don't|do not) support|not supported"
    r"|(?:will|would) fail|the reason (?:is|was)|workaround"
    r"|(?:I|we) need to (?:rewrite|use|switch|change|replace|keep|avoid|move))\b",
    re.IGNORECASE,
)
# _DECISION's alternatives lower-cased, each led by a word it needs (facts.Clues): a clue
# matches wherever an alternative does, and hardly anywhere else, so the sentences of
# items that only say "will", "fix" or "issue" are never searched.
_CHOICE = r"(?:use|go with|switch|keep|avoid|replace)"
_DECISION_CLUES: Clues = tuple(
    (word, re.compile(pattern))
    for word, pattern in (
        ("decide", "decide"), ("instead", "instead of"), ("rather", "rather than"),
        ("fix", "the fix (?:is|was|will be)"), ("root", "root cause"),
        ("'ll", "(?:i|we)'ll " + _CHOICE), ("will", "(?:i|we) will " + _CHOICE),
        ("let's", "let's " + _CHOICE), ("going", "going with"), ("opted", "opted"),
        ("chose", "chose"), ("the ", "the (?:bug|problem|issue|culprit) (?:is|was|lives)"),
        ("turns", "turns out"), ("only", "so only"), ("because", "because"),
        ("support", "(?:doesn't|does not|don't|do not) support|not supported"),
        ("fail", "(?:will|would) fail"), ("reason", "the reason (?:is|was)"),
        ("workaround", "workaround"),
        ("need", "(?:i|we) need to (?:rewrite|use|switch|change|replace|keep|avoid|move)"),
    )
)  # fmt: skip


_WORD = re.compile(r"\w+")


def focus_words(topic: str | None) -> tuple[str, ...]:
    """The words of a focus topic that items are matched on."""
    return tuple(w for w in _WORD.findall((topic or "").lower()) if len(w) >= 3)


def decisions(
    assistant: Sequence[tuple[int, str]], previous: Sequence[str], focus: Sequence[str] = ()
) -> tuple[str, ...]:
    """Choices and findings the agent stated, with their reasons: the newest kept, and
    with a focus topic the ones about it first (kept last, where trimming reaches last)."""
    found: list[str] = []
    for _, text in reversed(assistant):
        found.extend(reversed(_decisions_in(text)))
        if not focus and len(set(found)) >= MAX_DECISIONS:
            break
    merged = dedupe([*previous, *reversed(found)], keep_last=True)
    about = [d for d in merged if any(w in d.lower() for w in focus)]
    rest = [d for d in merged if d not in about]
    kept = rest[len(rest) - max(0, MAX_DECISIONS - len(about)) :] + about[-MAX_DECISIONS:]
    return tuple(kept)


# A sentence that only gives the reason for the one before it ("This is because …").
_REASON_NEXT = re.compile(
    r"(?:this is |that is |that's |it's )?(?:because|since|so that|otherwise|that way"
    r"|this (?:will|would|should|lets|allows|way)|which (?:allows|lets|means|would))\b",
    re.IGNORECASE,
)
REASON_CHARS = 200
"""The longest reason sentence joined to the decision it explains."""


def _decisions_in(text: str) -> list[str]:
    body = prose(text[:20_000])
    found: list[str] = []
    for item in clued_items(paragraphs(body), _DECISION_CLUES):
        sentences = item_sentences(item)
        joined = -1  # the reason sentence already joined to the decision before it
        for k, sentence in enumerate(sentences):
            if k == joined or len(sentence) < 20 or sentence[-1] in "?:":
                continue
            if not _DECISION.search(sentence):
                continue
            # The agent's stated reason stays with its decision: a trimmed list that
            # keeps the choice must keep why it was made.
            after = sentences[k + 1] if k + 1 < len(sentences) else ""
            sentence = collapse(sentence, 300)
            if after and len(after) <= REASON_CHARS and _REASON_NEXT.match(after):
                sentence, joined = f"{sentence} {after}", k + 1
            found.append(sentence)
    return found
