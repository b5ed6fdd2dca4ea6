"""One analysis per message, computed once and shared by every stage of a compaction.

:class:`Analyzer` turns a message into a :class:`MessageFacts` record: role, token cost,
whether it is a handoff or a real user turn, its tool calls parsed and recognized (what
each did: command, path, pattern, URL). Facts that only some stages need (exit code,
error lines, identifiers, files touched, archive handle, the user text) are computed on
first use and kept in the record, so the plan, pruning, the summarizer, the ledger and
the archive never compute them twice, and neither does the next compaction of the same
session (the compressor keeps its analyzer).

What must hold: a record describes the message object it was made from. The cache is
keyed by the object's identity and checked against the identity of its ``content`` and
``tool_calls`` values, so a message that was replaced (as every pass does) or had one of
them reassigned is analysed again. Callers never edit messages in place (design §1).
"""

from __future__ import annotations

import json
import re
import sys
from collections.abc import (
    Callable,
    ItemsView,
    Iterable,
    Iterator,
    KeysView,
    Mapping,
    Sequence,
    ValuesView,
)
from typing import Any, NamedTuple, cast

from ..core.errors import InvalidMessagesError
from ..core.jsonsafe import loads_or_none
from ..core.messages import (
    Message,
    call_arguments,
    call_id,
    call_name,
    check_input,
    check_message,
    content_text,
    tool_calls,
)
from ..core.tokens import IMAGE_TOKENS, TextCounter, message_tokens
from .kinds import is_handoff, is_real_user, user_text
from .toolshapes import ToolAction, classify_call, is_shell_name

_MISSING = object()


class CallFacts(NamedTuple):
    """One tool call: its id and name, its arguments parsed, and what it did.

    Non-JSON arguments of a shell tool are taken as the command line itself
    (``json_object`` tells whether the arguments were a JSON object). Long arguments are
    a :class:`LazyArguments` (parsed on each use), short ones a ``dict``.
    """

    id: str
    name: str
    args: Mapping[str, Any]
    action: ToolAction
    json_object: bool
    raw_arguments: str = ""
    """The arguments as sent (a handle of the original call hashes them)."""


class MessageFacts(NamedTuple):
    """The analysis of one message (see the module docstring); immutable.

    ``memo`` holds the facts computed on first use (see :meth:`remember`); what it holds
    is never mutated. Its keys are strings only: CPython keeps a dict whose keys are all
    ``str`` in a compact layout (16 bytes an entry instead of 24, and one key that is not
    a ``str`` converts the whole table for good), and a session's records live for the
    whole compaction (the largest real session: 295 memos of up to 14 facts).
    """

    message: Message
    role: str
    tokens: int
    handoff: bool
    real_user: bool
    memo: dict[str, Any]
    content: object
    """The message's ``content`` when the record was made (the cache checks it is still
    the message's: kept here rather than in a tuple of the cache's own per message)."""
    tool_calls: object
    """The message's ``tool_calls`` when the record was made (likewise)."""

    def remember(self, name: str, compute: Callable[[], Any]) -> Any:
        """``compute()``, computed once for this message."""
        memo = self.memo
        value = memo.get(name, _MISSING)
        if value is _MISSING:
            value = memo[name] = compute()
        return value

    @property
    def calls(self) -> tuple[CallFacts, ...]:
        """The assistant's tool calls, parsed and recognized (on first use)."""
        calls: tuple[CallFacts, ...] | None = self.memo.get("calls")
        if calls is None:
            calls = self.memo["calls"] = tuple(map(parse_call, tool_calls(self.message)))
        return calls

    @property
    def user_text(self) -> str:
        """What the user wrote in the message (:func:`~.kinds.user_text`: ``""`` for any
        other role and for a message a harness wrote); computed once, read by the plan,
        the user budgets and the handoff alike."""
        if self.role != "user":
            return ""
        text: str | None = self.memo.get("user_text")
        if text is None:
            text = self.memo["user_text"] = user_text(self.message)
        return text

    @property
    def text(self) -> str:
        """The message's text content (tool calls not included)."""
        content = self.message.get("content")
        if type(content) is str:
            return content
        text: str = self.remember("text", lambda: content_text(content))
        return text


_NO_CALLS: tuple[CallFacts, ...] = ()


def memo_key(name: str, *params: object) -> str:
    """The memo key of a fact computed with parameters: ``name:p1:p2``, each parameter
    by its ``repr`` (a folder named ``None`` is not ``None``). Interned: every record
    asking with the same parameters holds one shared key, not a string of its own (a
    session asks with a few values: the working directory, the calls kept as sent)."""
    return sys.intern(f"{name}:{':'.join(map(repr, params))}" if params else name)


# JSON-object arguments are not kept parsed: the parse (of a file written, a patch
# applied) doubled the memory of its message in every record, its masked copy and every
# event of the call (the largest real session: 0.68 -> 0.49 MB peak). The stages ask one
# call several questions in a row, so the last parse is kept (one entry: the memory of
# one call's arguments), replaced as a whole so threads see a consistent pair. Nothing
# mutates the value.
_LAST_PARSE: tuple[str | None, dict[str, Any]] = (None, {})


# The top-level keys of a call's arguments, shared between calls that name the same ones
# (a session's calls name a few sets of keys: one tuple each, not one per call). Bounded:
# past the limit a call keeps its own tuple.
_KEY_SETS: dict[tuple[str, ...], tuple[str, ...]] = {}
_KEY_SETS_LIMIT = 1_024


def _shared(keys: tuple[str, ...]) -> tuple[str, ...]:
    shared = _KEY_SETS.get(keys)
    if shared is None:
        if len(_KEY_SETS) >= _KEY_SETS_LIMIT:
            return keys
        shared = _KEY_SETS.setdefault(keys, keys)
    return shared


# Whether a set of keys lacks those a pattern matches, per (pattern, key set): a session's
# calls name a few key sets, and each question is asked of every call (one match per key
# per call before). Bounded like the key sets.
_LACKING: dict[tuple[re.Pattern[str], tuple[str, ...]], bool] = {}


class LazyArguments(Mapping[str, Any]):
    """The JSON-object arguments of a call, parsed from the raw text on each use (each
    method parses once); what must hold: ``raw`` parses to a JSON object no deeper than
    the limit of :func:`~windowkeeper.core.jsonsafe.loads_or_none` (see :func:`parse_call`),
    whose top-level keys are ``keys`` (when given: the caller parsed it once already)."""

    __slots__ = ("_keys", "raw")

    def __init__(self, raw: str, keys: Iterable[str] | None = None) -> None:
        self.raw = raw
        # Most questions the stages ask are about a key the call does not have (is there
        # a todo list, a working directory, a background flag): the keys answer them
        # without a parse, and without scanning a long text for each key asked about.
        self._keys = _shared(tuple(keys if keys is not None else json.loads(raw)))

    def _absent(self, key: object) -> bool:
        # A key that is not a str (a subclass too) takes the parsed object's own answer.
        return type(key) is str and key not in self._keys

    def lacks_keys(self, quoted: re.Pattern[str]) -> bool:
        """Whether none of some keys is present, told without a parse: ``quoted``
        matches each of them between double quotes, and nothing else (it is tried on
        each top-level key, quoted)."""
        keys = self._keys
        lacking = _LACKING.get((quoted, keys))
        if lacking is None:
            lacking = not any(quoted.fullmatch(f'"{key}"') for key in keys)
            if len(_LACKING) < _KEY_SETS_LIMIT:
                _LACKING[(quoted, keys)] = lacking
        return lacking

    def _value(self) -> dict[str, Any]:
        global _LAST_PARSE
        last = _LAST_PARSE
        if last[0] is self.raw:  # the stages ask one call several questions in a row
            return last[1]
        # parse_call checked once that the text is a JSON object within the depth limit:
        # the same text parses the same way, so neither check is repeated.
        value: dict[str, Any] = json.loads(self.raw)
        _LAST_PARSE = (self.raw, value)
        return value

    def __getitem__(self, key: str) -> Any:
        return self._value()[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._value())

    def __len__(self) -> int:
        return len(self._keys)

    def __contains__(self, key: object) -> bool:
        return not self._absent(key) and key in self._value()

    def get(self, key: str, default: Any = None) -> Any:
        return default if self._absent(key) else self._value().get(key, default)

    def keys(self) -> KeysView[str]:
        return self._value().keys()

    def values(self) -> ValuesView[Any]:
        return self._value().values()

    def items(self) -> ItemsView[str, Any]:
        return self._value().items()

    def __repr__(self) -> str:
        return f"LazyArguments({self.raw[:40]!r}…)"


def parse_call(call: Mapping[str, Any]) -> CallFacts:
    name, raw = call_name(call), call_arguments(call)
    parsed = _parsed(raw)
    json_object = parsed is not None
    args: Mapping[str, Any] = parsed if parsed is not None else {}
    # A shell's arguments that hold nothing (not a JSON object, or an empty one) are its
    # command line: recognized once, with it (a shell with no arguments is one anyway).
    if not args and raw.strip() and is_shell_name(name):
        args = {"command": raw.strip()}
    action = classify_call(name, args)
    if parsed is not None:
        args = LazyArguments(raw, parsed.keys())
    return _new_call(CallFacts, (call_id(call), name, args, action, json_object, raw))


def _parsed(raw: str) -> dict[str, Any] | None:
    """The arguments as a JSON object; ``None`` when they are not one."""
    if not raw:
        return None
    value = loads_or_none(raw)  # over 100 levels deep: not JSON for us (no walk recurses)
    return value if isinstance(value, dict) else None


class Analyzer:
    """Makes and keeps the :class:`MessageFacts` of messages (one per compressor).

    Args:
        image_tokens: flat token price of one image.
        count: counts text tokens (the rough estimate when ``None``).
    """

    def __init__(self, *, image_tokens: int = IMAGE_TOKENS, count: TextCounter | None = None):
        self.image_tokens = image_tokens
        self.count = count
        self._records: dict[int, MessageFacts] = {}

    def facts(self, message: Message) -> MessageFacts:
        """The record of ``message``, from the cache when it is still the same message."""
        record = self._current(message)
        if record is not None:
            return record
        check_message(message, "message")
        return self._keep(message, self._analyze(message))

    def _current(self, message: Message) -> MessageFacts | None:
        """The cached record of ``message`` while it is still the same message (the same
        object, content and calls); only messages that were checked are kept."""
        cached = self._records.get(id(message))
        if (
            cached is not None
            and cached.message is message
            and cached.content is message.get("content")
            and cached.tool_calls is message.get("tool_calls")
        ):
            return cached
        return None

    def _keep(self, message: Message, record: MessageFacts) -> MessageFacts:
        self._records[id(message)] = record
        return record

    def analyze(self, messages: Sequence[Message]) -> list[MessageFacts]:
        """The records of ``messages``, in order; a message the engine cannot take (checked
        once, when its record is made) raises :class:`InvalidMessagesError`."""
        if not isinstance(messages, list | tuple):
            check_input(messages)  # raises: not a list
        facts = self.facts
        try:
            return [facts(m) for m in messages]
        except InvalidMessagesError:
            check_input(messages)  # the same defect, with the message's index
            raise

    def seed(self, counted: Iterable[tuple[Message, int]], image_tokens: int,
             count: TextCounter | None) -> None:  # fmt: skip
        """Make the records of messages an estimate at the same prices already counted and
        checked (``check_message``), without counting them again."""
        if image_tokens != self.image_tokens or count is not self.count:
            return
        # A session's first estimate seeds a whole history no record holds yet: a message
        # without a record under its id needs no ``_current`` (a call per message).
        records, get, analyze = self._records, self._records.get, self._analyze
        for message, tokens in counted:
            if get(id(message)) is None or self._current(message) is None:
                records[id(message)] = analyze(message, tokens)

    def counted(self, message: Message, image_tokens: int, count: TextCounter | None) -> int | None:
        """The tokens of ``message``'s record at these prices, when it has one (its message
        was checked when the record was made); ``None`` otherwise (the reverse of
        :meth:`seed`: an estimate of a compaction's output counts nothing again)."""
        if image_tokens != self.image_tokens or count is not self.count:
            return None
        record = self._current(message)
        return record.tokens if record is not None else None

    def holds_records(self) -> bool:
        """Whether any record is kept (none before a compressor's first analysis)."""
        return bool(self._records)

    def retain(self, messages: Sequence[Message]) -> None:
        """Forget every record but those of ``messages`` (the session's current list)."""
        records = self._records
        # Built in C over ``messages`` (never over every record kept: a compaction adds
        # the records of the copies its passes tried); the order of the records does not
        # matter, they are only looked up by id.
        kept = list(filter(records.__contains__, map(id, messages)))
        self._records = dict(zip(kept, map(records.__getitem__, kept), strict=True))

    def _analyze(self, message: Message, tokens: int | None = None) -> MessageFacts:
        role = message.get("role")
        if tokens is None:
            tokens = message_tokens(message, image_tokens=self.image_tokens, count=self.count)
        content, calls = message.get("content"), message.get("tool_calls")
        if role != "user" and role != "assistant":
            memo: dict[str, Any] = {"calls": _NO_CALLS}
            made = (message, str(role), tokens, is_handoff(message), False, memo, content, calls)
            return _new_record(MessageFacts, made)
        handoff = is_handoff(message)
        real_user = role == "user" and is_real_user(message)
        made = (message, role, tokens, handoff, real_user, {}, content, calls)
        return _new_record(MessageFacts, made)


# A record made from its field values as a tuple: a NamedTuple's own ``__new__`` is a
# Python function that does the same after binding each argument (a record per message).
_new_record = cast(Callable[[type[MessageFacts], tuple[Any, ...]], MessageFacts], tuple.__new__)
# Likewise a call's facts (every call of the turns a compaction reads).
_new_call = cast(Callable[[type[CallFacts], tuple[Any, ...]], CallFacts], tuple.__new__)
