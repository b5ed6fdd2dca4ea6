"""A compaction prepared off the request path, as a value (design §4, background compaction).

It says what it was made from — the first ``length`` messages of the history, by content
digest — and what they became; :func:`~windowkeeper.engine.background.adopt` applies it
to a later history that still starts with exactly those messages. It serializes to JSON
(:meth:`PreparedCompaction.to_json`), so a store can keep it with its session and another
process (a second gateway, a restarted one) can apply or discard it.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, fields
from typing import Any

from ..core.messages import Message, strip_private_keys, to_json
from ..core.report import (
    ArchivedItem,
    CompressionReport,
    FailureKind,
    Outcome,
    Reason,
    Receipt,
    Tier,
)

__all__ = ("PreparedCompaction", "history_digest", "report_from_dict")


def history_digest(messages: Sequence[Mapping[str, Any]]) -> str:
    """The content digest of a history as the provider sees it (``_`` keys ignored):
    equal for equal messages whatever their identity, different for any edit."""
    hasher = hashlib.blake2b(digest_size=20)
    for message in messages:
        hasher.update(to_json(strip_private_keys(message)).encode("utf-8", "surrogatepass"))
        hasher.update(b"\x1e")
    return hasher.hexdigest()


@dataclass(frozen=True)
class PreparedCompaction:
    """A completed compaction of the first ``length`` messages of a history.

    Attributes:
        length / digest: the history it was made from (count and content digest).
        messages: what those messages became (head, handoff, tail).
        report: the compaction's report as prepared (tier, summarizer, failure, figures).
        archived: every original it replaced, indexed into the history it was made from.
        summary: the handoff body (``None`` for a prune-only result).
        previous_summary: the compressor's previous summary after it.
        dropped: ``(start, end)`` of the summarized turns (what pre-compress hooks see).
        threshold / context_length: the trigger and window it was made for.
        epoch: the session epoch of the compressor that made it (``-1`` from a store).
        prepared_ms: how long the job took (what applying it saves the agent).
    """

    length: int
    digest: str
    messages: tuple[Message, ...]
    report: CompressionReport
    archived: tuple[ArchivedItem, ...]
    summary: str | None
    previous_summary: str | None
    dropped: tuple[int, int]
    threshold: int
    context_length: int
    epoch: int
    prepared_ms: float

    def to_json(self) -> str:
        data = {
            "length": self.length,
            "digest": self.digest,
            "messages": list(self.messages),
            "report": self.report.to_dict(),
            "archived": [[a.handle, a.kind, a.index, a.message] for a in self.archived],
            "summary": self.summary,
            "previous_summary": self.previous_summary,
            "dropped": list(self.dropped),
            "threshold": self.threshold,
            "context_length": self.context_length,
            "prepared_ms": self.prepared_ms,
        }
        return to_json(data)

    @classmethod
    def from_json(cls, text: str) -> PreparedCompaction:
        """The value :meth:`to_json` wrote (``epoch`` -1: it came from elsewhere);
        ``ValueError`` / ``KeyError`` / ``TypeError`` on anything else."""
        data = json.loads(text)
        archived = tuple(
            ArchivedItem(str(h), str(k), int(i), dict(m)) for h, k, i, m in data["archived"]
        )
        start, end = data["dropped"]
        return cls(
            int(data["length"]), str(data["digest"]), tuple(dict(m) for m in data["messages"]),
            report_from_dict(data["report"]), archived, data["summary"],
            data["previous_summary"], (int(start), int(end)), int(data["threshold"]),
            int(data["context_length"]), -1, float(data["prepared_ms"]),
        )  # fmt: skip


def report_from_dict(data: Mapping[str, Any]) -> CompressionReport:
    """The report :meth:`CompressionReport.to_dict` wrote (the background note aside)."""
    known = {f.name for f in fields(CompressionReport)} - {"background", "receipt"}
    values = {key: data[key] for key in known if key in data}
    values["outcome"] = Outcome(data["outcome"])
    values["reason"] = Reason(data["reason"]) if data.get("reason") else None
    values["tier"] = Tier(data["tier"]) if data.get("tier") else None
    values["failure"] = FailureKind(data["failure"]) if data.get("failure") else None
    values["warnings"] = tuple(data.get("warnings") or ())
    receipt = data.get("receipt")
    if receipt:
        values["receipt"] = Receipt(**{**receipt, "tier": Tier(receipt["tier"])})
    return CompressionReport(**values)
