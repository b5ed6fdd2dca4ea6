"""Outputs that define the work (SPEC §6 v3 "task spec"), and what of them is kept.

A spec output is recognized by the general shape of the call that produced it, never by
a list of one project's commands:
- a look-up of a work item through any tracker's command line: an item noun and a
  look-up verb (``gh issue view 12``, ``jira issue view KEY-1``, ``glab mr view 3``,
  ``az boards work-item show --id 7``), or a tracker's own look-up verb and an item id
  (``bd show app-7.1``, ``linear view ENG-12``);
- a tool that gets an issue or a ticket (``mcp__linear__get_issue``, ``jira_get_issue``);
- an issue, pull request or ticket fetched from the web (by its URL's shape);
- a document read whose name says it is a spec or a plan (``docs/plan.md``,
  ``SPEC.md``, ``requirements.txt`` is not one: only prose documents), or a document the
  user named.

Its excerpt (:mod:`.specexcerpt`) is the output verbatim within a budget, else the lines
that constrain the work before the narrative ones.
A prune stub of a spec output keeps its excerpt on its one line (``; spec: …``), so the
excerpt survives any number of prune-only compactions before a handoff reads it.
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Callable, Collection, Iterable, Iterator

from .events import ToolEvent, remembered
from .gist import is_stub
from .shellwords import lines_of, steps_of
from .specexcerpt import spec_excerpt
from .toolshapes import FETCH_KIND, OTHER_KIND, READ_KIND, SHELL_KIND

_FETCHER = re.compile(r"\b(?:curl|wget|http|xh)\b")

STUB_SPEC_CHARS = 900
"""An excerpt's size on a prune stub's line."""
STUB_MARK = "; spec: "
LINE_JOIN = " ⏎ "
"""How a stub's one line joins the excerpt's lines (split back by :func:`spec_text`)."""

_VERBS = frozenset({"show", "view", "get", "describe", "info", "read", "display", "details"})
# Any of the verbs anywhere, in one scan (one regex search, not a substring search and a
# generator step per verb): the verbs are plain words, so the alternation of them escaped
# matches wherever one of them occurs.
_ANY_VERB = re.compile("|".join(map(re.escape, sorted(_VERBS))))
_GATE_WORD = re.compile(f" (?:{_ANY_VERB.pattern})")


def _may_look_up(command: str) -> bool:
    """A cheap gate: a look-up needs one of the verbs after a space, or a URL."""
    text = command.lower()
    return "://" in text or _GATE_WORD.search(text) is not None


_NOUNS = frozenset({
    "issue", "issues", "ticket", "tickets", "task", "tasks", "story", "stories", "bug", "bugs",
    "item", "items", "workitem", "work-item", "workitems", "work-items", "pr", "mr", "epic",
    "epics", "card", "cards", "feature", "features", "requirement", "requirements",
})  # fmt: skip
# Command-line trackers whose look-up verb comes right after the program.
_TRACKERS = frozenset({
    "bd", "beads", "jira", "linear", "lin", "acli", "tk", "ticket", "tea", "hub", "lab",
    "youtrack", "yt", "shortcut", "clubhouse", "asana", "trello", "taiga", "redmine",
    "git-bug", "plane", "height", "gitea", "fj",
})  # fmt: skip
_ITEM_ID = re.compile(
    r"#?\d{1,7}|[A-Za-z][A-Za-z0-9_]*-[A-Za-z0-9]+(?:[.-][A-Za-z0-9]+)*"
    r"|https?://\S+/(?:issues|pull|pulls|merge_requests|browse|tickets?|work_?items?)/\S+"
)
_ISSUE_URL = re.compile(
    r"https?://\S+/(?:issues|pull|pulls|merge_requests|browse|tickets?|work_?items?)/[\w.-]+",
    re.IGNORECASE,
)
_TOOL_NOUN = re.compile(r"issue|ticket|story|bug|epic|work_?item|pull_?request|requirement", re.I)
_TOOL_VERB = re.compile(r"get|view|show|read|fetch|describe|retrieve|lookup", re.I)
_DOCUMENT = frozenset({".md", ".markdown", ".txt", ".rst", ".adoc", ".org", ".mdx", ""})
_SPEC_NAME = re.compile(
    r"spec|plan|design|requirement|prd|rfc|proposal|brief|issue|ticket|task|todo|story"
    r"|acceptance|adr|roadmap|scope",
    re.IGNORECASE,
)
_NOT_SPEC_NAME = re.compile(r"^(?:requirements|constraints)[\w-]*\.txt$|changelog|license", re.I)


def look_up_item(event: ToolEvent) -> str | None:
    """The item a tracker or issue look-up shows (``""`` when it names none), or
    ``None`` when the event is no look-up (computed once per event)."""
    found: str | None = remembered(event, "spec_item", _look_up_item)
    return found


def _look_up_item(event: ToolEvent) -> str | None:
    if event.failed or not event.result or event.orphan:
        return None
    action = event.action
    if action.kind is SHELL_KIND:
        return _shell_item(action.command or "")
    if action.kind is FETCH_KIND:
        match = _ISSUE_URL.search(action.url or action.target)
        return match.group(0) if match else None
    name = action.name
    if action.kind is OTHER_KIND and _TOOL_NOUN.search(name) and _TOOL_VERB.search(name):
        for key in ("issueId", "issue_id", "id", "key", "number", "issue", "ticket", "identifier"):
            value = event.args.get(key)
            if isinstance(value, str | int) and not isinstance(value, bool):
                return str(value)
        return ""
    return None


def _shell_item(command: str) -> str | None:
    """The item of the first look-up step of a command line (see the module docstring)."""
    items = shell_items(command)
    return items[0] if items else None


def shell_items(command: str) -> tuple[str, ...]:
    """The items of every look-up step of a command line, in order (``""`` for a step
    that names none)."""
    found: list[str] = []
    if len(command) > 2_000 or not _may_look_up(command):
        return ()  # no look-up verb and no URL: most commands are read no further
    for line in lines_of(command)[0]:
        for tokens in steps_of(line) if _may_hold_verb(line) else ():
            item = _step_item([t for t in tokens if t])
            if item is not None:
                found.append(item)
        match = _ISSUE_URL.search(line) if "://" in line else None
        if match and _FETCHER.search(line):
            found.append(match.group(0))
    return tuple(found)


_UNQUOTE = str.maketrans("", "", "'\"\\")


def _may_hold_verb(line: str) -> bool:
    """Whether a word of ``line`` can be a look-up verb: a word is its characters without
    the quotes and backslashes around and in it, so the verb's letters follow each other
    in the line once those are taken out (a script's lines mostly hold none: only those
    that do are split into words)."""
    text = line.lower().translate(_UNQUOTE)
    return _ANY_VERB.search(text) is not None


_SEPARATOR = re.compile(r"\n[ \t]*(?:={3,}|-{3,}|\*{3,}|#{3,})[ \t]*(?:\n|$)")


def look_up_parts(event: ToolEvent) -> list[tuple[str, str]]:
    """(item, output) per item of a look-up: a command that looks up several items with
    separator lines between their outputs (``bd show a; echo ===; bd show b``) gives one
    part per item; any other look-up one part, its whole output."""
    item = look_up_item(event)
    result = event.result or ""
    if item is None:
        return []
    items = shell_items(event.action.command or "") if event.action.kind is SHELL_KIND else ()
    if len(items) > 1:
        parts = [p for p in _SEPARATOR.split(result) if p.strip()]
        if len(parts) == len(items):
            pairs = list(zip(items, parts, strict=True))
            if all(item and item in part for item, part in pairs):
                return pairs
    return [(item, result)]


def _step_item(words: list[str]) -> str | None:
    program = words[0].rsplit("/", 1)[-1] if words else ""
    rest = [w.lower() for w in words[1:6]]
    for index, word in enumerate(rest):
        if word not in _VERBS:
            continue
        noun = any(w in _NOUNS for w in rest[:index])
        if noun or (index == 0 and program.lower() in _TRACKERS):
            return _first_id(words[index + 2 :]) or ""
    return None


def _first_id(words: Iterable[str]) -> str | None:
    for word in words:
        if word.startswith("-") and not word.startswith("#"):
            continue
        if _ITEM_ID.fullmatch(word):
            return word
    return None


_NAMED_DOCUMENT = re.compile(r"(?<![\w./~-])[\w./~-]*[\w-]\.(?:md|markdown|txt|rst|adoc|mdx)\b")
# What every match holds (".mdx" holds ".md"): a text without one is not scanned.
_DOCUMENT_SUFFIXES = (".md", ".markdown", ".txt", ".rst", ".adoc")


def named_documents(texts: Iterable[str]) -> frozenset[str]:
    """Base names of documents the user named (lower case), from the user's texts."""
    found: set[str] = set()
    for text in texts:
        # The pattern starts only where a path can (linear in the text); most texts name
        # no document, and a substring search tells that at a fraction of the regex's cost.
        if any(suffix in text for suffix in _DOCUMENT_SUFFIXES):
            for match in _NAMED_DOCUMENT.finditer(text):
                found.add(posixpath.basename(match.group(0)).lower())
    return frozenset(found)


class NamedLater(Collection[str]):
    """:func:`named_documents` of texts read only when first asked (most outputs are no
    document read, so the user's texts are mostly never scanned)."""

    def __init__(self, texts: Callable[[], Iterable[str]]) -> None:
        self._texts = texts
        self._names: frozenset[str] | None = None

    def _loaded(self) -> frozenset[str]:
        if self._names is None:
            self._names = named_documents(self._texts())
        return self._names

    def __contains__(self, item: object) -> bool:
        return item in self._loaded()

    def __iter__(self) -> Iterator[str]:
        return iter(self._loaded())

    def __len__(self) -> int:
        return len(self._loaded())


def is_spec_read(event: ToolEvent, named: Collection[str] = ()) -> bool:
    """A prose document read that is named like a spec or a plan, or that the user named."""
    if event.action.kind is not READ_KIND or event.failed or not event.result:
        return False
    path = event.action.path or event.action.target
    base = posixpath.basename(path).lower()
    stem, ext = posixpath.splitext(base)
    if ext not in _DOCUMENT or _NOT_SPEC_NAME.search(base) or not stem:
        return False
    return base in named or bool(_SPEC_NAME.search(stem))


def is_spec(event: ToolEvent, named: Collection[str] = ()) -> bool:
    """Whether ``event``'s output defines the work (see the module docstring)."""
    return look_up_item(event) is not None or is_spec_read(event, named)


def stub_spec(event: ToolEvent) -> str:
    """``"; spec: …"`` for a prune stub of a spec output (its excerpt on one line)."""
    text, _ = spec_excerpt(event.result or "", STUB_SPEC_CHARS)
    return STUB_MARK + LINE_JOIN.join(" ".join(line.split()) for line in text.splitlines())


_HANDLE = re.compile(r"\(ref (wk[0-9a-f]+)\)\s*$")


def spec_text(result: str) -> tuple[str, str]:
    """(the spec text, the handle) of a spec output: the output itself, or the excerpt
    and handle its prune stub kept (``("", handle)`` for a stub that kept none)."""
    if not is_stub(result):
        return result, ""
    handle = _HANDLE.search(result)
    _, found, rest = result.partition(STUB_MARK)
    text = _HANDLE.sub("", rest).rstrip() if found else ""
    return text.replace(LINE_JOIN, "\n"), handle.group(1) if handle else ""
