"""Key decisions with their reasons (design §5 section 6): the choices and findings the
agent stated, the newest kept (with a focus topic, the ones about it kept longest), and
the reasons the agent gave for the changes it made.

A change's reason is what the agent wrote beside the call that made it (or in the text
message right before a call-only message): "The generated migration uses X, which SQLite
doesn't support. I need to rewrite it …" then a write of that file. Such a line is shown
as "Changed `name`: reason" and ranked first when the budget shows few decisions
(text.py): it says what was chosen, for which file, and why, where a bare finding
("The import isn't used yet because …") says none of that.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import NamedTuple

from ...analysis.events import ToolEvent
from ...analysis.facts import (
    Clues,
    caseless_search,
    clued_items,
    collapse,
    dedupe,
    item_sentences,
    paragraphs,
    prose,
    scanned_clues,
    sentences,
    word_clues,
)
from ...analysis.toolshapes import EDIT_KIND, WRITE_KIND
from .trail import event_files

MAX_DECISIONS = 16
_DECISION = re.compile(
    r"\b(?:decided|decide to|instead of|rather than|the fix (?:is|was|will be)|root cause"
    r"|(?:I'll|I will|we'll|we will|let's) (?:use|go with|switch|keep|avoid|replace)"
    r"|going with|opted|chose|chosen|the (?:bug|problem|issue|culprit) (?:is|was|lives)"
    r"|turns out|so only|because|(?:doesn't|does not|don't|do not) support|not supported"
    r"|(?:will|would) fail|the reason (?:is|was)|workaround"
    r"|(?:I|we) need to (?:rewrite|use|switch|change|replace|keep|avoid|move)"
    r"|(?:is|are|seems|looks|would be) (?:cleaner|simpler|safer|more robust|better))\b",
    re.IGNORECASE,
)
# _DECISION's alternatives lower-cased, each led by a word it needs (facts.Clues): a clue
# matches wherever an alternative does, and hardly anywhere else, so the sentences of
# items that only say "will", "fix" or "issue" are never searched.
_CHOICE = r"(?:use|go with|switch|keep|avoid|replace)"
# A judgement between alternatives ("re.DOTALL is cleaner and more robust").
_BETTER = ("cleaner", "simpler", "safer", "more robust", "better")
_DECISION_CLUES: Clues = scanned_clues(tuple(
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
        *((word, f"(?:is|are|seems|looks|would be) {word}") for word in _BETTER),
    )
))  # fmt: skip


_WORD = re.compile(r"\w+")


def focus_words(topic: str | None) -> tuple[str, ...]:
    """The words of a focus topic that items are matched on."""
    return tuple(w for w in _WORD.findall((topic or "").lower()) if len(w) >= 3)


def decisions(
    assistant: Sequence[tuple[int, str]],
    previous: Sequence[str],
    focus: Sequence[str] = (),
    changes: Changes | None = None,
) -> tuple[str, ...]:
    """Choices and findings the agent stated, with their reasons: the newest kept, and
    with a focus topic the ones about it first (kept last, where trimming reaches last).

    ``changes``: the files the assistant's calls changed; the newest
    :data:`MAX_CHANGE_REASONS` texts that give a reason for such a change become
    "Changed `name`: reason" lines in their place among the decisions, and are kept
    beside the newest :data:`MAX_DECISIONS` others."""
    reasons = _change_reasons(assistant, changes or Changes({}, frozenset()))
    found: list[tuple[int, str]] = []
    for position, text in reversed(assistant):
        if position in reasons:
            continue
        found.extend((position, d) for d in reversed(_decisions_in(text)))
        if not focus and len({d for _, d in found}) >= MAX_DECISIONS:
            break
    # ``found`` is newest first, each text's decisions last to first: reversed, it is in
    # the order written, which the sort by position (stable) keeps within each text.
    ordered = sorted([*reversed(found), *reasons.items()], key=lambda pair: pair[0])
    merged = dedupe([*previous, *(d for _, d in ordered)], keep_last=True)
    about = [d for d in merged if any(w in d.lower() for w in focus)]
    rest = [d for d in merged if d not in about]
    # The change reasons (these turns' and the previous handoff's) are kept beside the
    # newest plain decisions, not counted against them.
    plain = [d for d in rest if not is_change_reason(d)]
    keep = set(plain[len(plain) - max(0, MAX_DECISIONS - len(about)) :])
    keep.update(d for d in rest if is_change_reason(d))
    kept = [d for d in rest if d in keep][-(MAX_DECISIONS + MAX_CHANGE_REASONS) :]
    return tuple(kept + about[-MAX_DECISIONS:])


class Changes(NamedTuple):
    """Where the assistant's calls changed files."""

    paths: Mapping[int, str]
    """Position of an assistant message whose calls changed an existing file -> the first
    such file."""
    calling: frozenset[int]
    """Positions of the assistant messages that made any call."""

    def of_text(self, position: int) -> str | None:
        """The file changed by the message at ``position``, or, for a text-only message,
        by the message right after it (agents that send their words and their call as
        two messages)."""
        if position in self.calling:
            return self.paths.get(position)
        return self.paths.get(position + 1)


_EDITORS = (EDIT_KIND, WRITE_KIND)


def changes_of(events: Sequence[ToolEvent], cwds: Sequence[str | None]) -> Changes:
    """The :class:`Changes` of ``events`` (each run in the directory beside it)."""
    paths: dict[int, str] = {}
    for event, cwd in zip(events, cwds, strict=True):
        # Only an editor's change of an existing file counts: most files an agent creates,
        # by a tool or from the shell (where "written" does not say "existed"), are
        # scratch scripts (a reproduction, a debug print), and the words beside them
        # explain an experiment, not a choice; an existing file edited is the work itself.
        if event.position not in paths and event.action.kind in _EDITORS:
            files = event_files(event, cwd)
            changed = [path for path, status in files if status == "modified"]
            if changed:
                paths[event.position] = changed[0]
    return Changes(paths, frozenset(event.position for event in events))


MAX_CHANGE_REASONS = 6
_CHANGE_REASON = re.compile(r"Changed `[^`\n]+`: ")
# A limit or an alternative: what makes a reason explain a choice.
_LIMIT = (
    r"instead of|rather than|cleaner|simpler|safer|more robust"
    r"|(?:doesn't|does not|don't|do not|cannot|can't|can not|won't|isn't) (?:support|work|handle"
    r"|allow|alter|change)|not supported|unsupported|(?:will|would) (?:fail|break)"
)
# Any stated cause or purpose.
_CAUSE = (
    r"because|since (?:the|it|we|this)|so that|the reason|otherwise|to avoid|in order to"
    r"|due to|caused by|required|requires"
)
_LIMITS = re.compile(rf"\b(?:{_LIMIT})\b", re.IGNORECASE)
# What makes the text beside a change its reason. A text without one only announces the
# step ("Now update x.py.", "I need to rename …") and is not a decision.
_WHY = re.compile(rf"\b(?:{_LIMIT}|{_CAUSE})\b", re.IGNORECASE)
# Searched lowered in ASCII text, as _DECISION (facts.caseless_search).
_why, _decision = caseless_search(_WHY), caseless_search(_DECISION)
# A word each alternative of _WHY holds (facts.Clues: "n't" and "not" stand for the
# negations, "support" also for "unsupported").
_WHY_CLUES = word_clues(
    "instead of", "rather than", "cleaner", "simpler", "safer", "more robust", "n't", "not",
    "support", "fail", "break", "because", "since", "so that", "the reason", "otherwise",
    "to avoid", "in order to", "due to", "caused by", "requir",
)  # fmt: skip
_CHANGE_CHARS = 300


def is_change_reason(decision: str) -> bool:
    """Whether a decision line gives the reason for a change the agent made."""
    return _CHANGE_REASON.match(decision) is not None


def weight(decision: str) -> int:
    """How much a decision line tells a reader asked why: a change's reason (what was
    changed, and why) 4 when it names a limit or an alternative ("SQLite doesn't support
    …", "instead of …", "X is cleaner"), else 3; another line 2 when it names one, 1 when
    it states another reason ("because …"), else 0 (a bare choice or finding)."""
    limit = _LIMITS.search(decision) is not None
    if is_change_reason(decision):
        return 4 if limit else 3
    return 2 if limit else 1 if _why(decision) else 0


def _change_reasons(assistant: Sequence[tuple[int, str]], changes: Changes) -> dict[int, str]:
    """Position -> "Changed `name`: reason" for the newest texts that give a reason for
    the change their message (or, for a text-only message, the next one) made."""
    found: dict[int, str] = {}
    if not changes.paths:
        return found
    seen: set[str] = set()  # the newest reason of each file is kept
    for position, text in reversed(assistant):
        path = changes.of_text(position)
        if path is None or path in seen:
            continue
        why = _why_sentences(_sentences_of(text))
        if why:
            seen.add(path)
            name = path.rstrip("/").rpartition("/")[2] or path
            found[position] = f"Changed `{name}`: {_whole(why, _CHANGE_CHARS)}"
            if len(found) >= MAX_CHANGE_REASONS:
                break
    return found


def _why_sentences(sentences: Sequence[str]) -> list[str]:
    """The sentences that give a reason, each with the one after it (what the agent
    then chose to do: "X doesn't support Y. I need to rewrite it as Z.")."""
    picked: dict[int, None] = {}
    clued = set(clued_items(sentences, _WHY_CLUES))  # only these can hold a reason
    for k, sentence in enumerate(sentences):
        if sentence in clued and _why(sentence) and sentence[-1] != "?":
            picked[k] = None
            if k + 1 < len(sentences) and sentences[k + 1][-1] != "?":
                picked[k + 1] = None
    return [sentences[k].rstrip(":") for k in sorted(picked)]


def _whole(sentences: Sequence[str], limit: int) -> str:
    """The first sentences that fit in ``limit`` characters, each whole (a reason cut
    mid-word loses its point: "… means the upsert identit…"); the first one cut when it
    alone is longer."""
    kept, size = [sentences[0]], len(sentences[0])
    for sentence in sentences[1:]:
        size += 1 + len(sentence)
        if size > limit:
            break
        kept.append(sentence)
    return collapse(" ".join(kept), limit)


def _sentences_of(text: str) -> list[str]:
    return [s for s in sentences(text[:20_000]) if len(s) >= 20]


# A sentence that only gives the reason for the one before it ("This is because …").
_REASON_NEXT = re.compile(
    r"(?:this is |that is |that's |it's )?(?:because|since|so that|otherwise|that way"
    r"|this (?:will|would|should|lets|allows|way)|which (?:allows|lets|means|would))\b",
    re.IGNORECASE,
)
_reason_next = caseless_search(_REASON_NEXT, at_start=True)  # lowered in ASCII: faster
REASON_CHARS = 200
"""The longest reason sentence joined to the decision it explains."""


def _decisions_in(text: str) -> list[str]:
    body = prose(text[:20_000])
    found: list[str] = []
    for item in clued_items(paragraphs(body), _DECISION_CLUES):
        sentences = item_sentences(item)
        # the item's sentences a clue is in: only those are searched with _DECISION
        clued = set(clued_items(sentences, _DECISION_CLUES) if len(sentences) > 1 else sentences)
        joined = -1  # the reason sentence already joined to the decision before it
        for k, sentence in enumerate(sentences):
            if k == joined or len(sentence) < 20 or sentence[-1] in "?:":
                continue
            if sentence not in clued or not _decision(sentence):
                continue
            # The agent's stated reason stays with its decision: a trimmed list that
            # keeps the choice must keep why it was made.
            after = sentences[k + 1] if k + 1 < len(sentences) else ""
            sentence = collapse(sentence, 300)
            if after and len(after) <= REASON_CHARS and _reason_next(after):
                sentence, joined = f"{sentence} {after}", k + 1
            found.append(sentence)
    return found
