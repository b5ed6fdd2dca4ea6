"""Observability: one INFO log line per compaction and Prometheus metrics (``/metrics``).

Every gateway has its own registry (several gateways in one process, e.g. in tests, do not
share counters). Log lines and labels carry figures, protocol names, triggers, tiers and
error classes only, never message text or credentials.
"""

from __future__ import annotations

import logging

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest
from prometheus_client.exposition import CONTENT_TYPE_PLAIN_0_0_4

from ..core.report import CompressionReport
from ..engine.compressor import ContextCompressor
from ..engine.prepared import PreparedCompaction
from ..loop.events import Event, EventKind, Trigger

log = logging.getLogger("windowkeeper.gateway")

CONTENT_TYPE = CONTENT_TYPE_PLAIN_0_0_4
_LATENCY_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300)


class BackgroundCounters:
    """What background compaction did in this gateway (design §4)."""

    def __init__(self, registry: CollectorRegistry) -> None:
        self.prepared = Counter(
            "windowkeeper_gateway_background_prepared",
            "Compactions prepared in the background by this gateway.",
            registry=registry,
        )
        self.applied = Counter(
            "windowkeeper_gateway_background_applied",
            "Compactions prepared in the background (by any gateway) applied here.",
            registry=registry,
        )
        self.discarded = Counter(
            "windowkeeper_gateway_background_discarded",
            "Background compactions discarded (then run in the foreground), by reason.",
            ["reason"],
            registry=registry,
        )
        self.saved = Counter(
            "windowkeeper_gateway_background_saved_seconds",
            "Time agents did not wait: preparation time of applied compactions less the wait.",
            registry=registry,
        )
        self.deferred = Counter(
            "windowkeeper_gateway_background_deferred",
            "Requests past the trigger (by the estimate) sent unchanged while their "
            "compaction was prepared in the background.",
            registry=registry,
        )


class Metrics:
    """The gateway's counters; :meth:`on_event` is every session manager's event sink."""

    def __init__(self) -> None:
        self.registry = CollectorRegistry(auto_describe=True)
        r = self.registry
        self.requests = Counter(
            "windowkeeper_gateway_requests",
            "Model requests by protocol and outcome.",
            ["protocol", "outcome"],
            registry=r,
        )
        self.compactions = Counter(
            "windowkeeper_gateway_compactions",
            "Compactions by trigger and tier.",
            ["trigger", "tier"],
            registry=r,
        )
        self.tokens_saved = Counter(
            "windowkeeper_gateway_tokens_saved",
            "Estimated prompt tokens removed by compactions.",
            registry=r,
        )
        self.upstream_seconds = Histogram(
            "windowkeeper_gateway_upstream_seconds",
            "Upstream latency until the answer (or the stream) began.",
            ["protocol"],
            buckets=_LATENCY_BUCKETS,
            registry=r,
        )
        self.errors = Counter(
            "windowkeeper_gateway_errors", "Errors by class.", ["error"], registry=r
        )
        self.passthrough = Counter(
            "windowkeeper_gateway_passthrough",
            "Requests forwarded uncompacted, by reason.",
            ["reason"],
            registry=r,
        )
        self.recall_calls = Counter(
            "windowkeeper_gateway_recall_calls",
            "recall calls the gateway answered itself.",
            registry=r,
        )
        self.sessions = Gauge(
            "windowkeeper_gateway_sessions", "Sessions held in memory.", registry=r
        )
        self.background = BackgroundCounters(r)
        # The labelled children of the per-request metrics, found once: ``labels()``
        # validates and locks on every call, and every request counts twice.
        self._requests: dict[tuple[str, str], Counter] = {}
        self._upstream: dict[str, Histogram] = {}

    def count_request(self, protocol: str, outcome: str) -> None:
        child = self._requests.get((protocol, outcome))
        if child is None:
            child = self._requests[protocol, outcome] = self.requests.labels(protocol, outcome)
        child.inc()

    def observe_upstream(self, protocol: str, seconds: float) -> None:
        child = self._upstream.get(protocol)
        if child is None:
            child = self._upstream[protocol] = self.upstream_seconds.labels(protocol)
        child.observe(seconds)

    def render(self) -> bytes:
        return generate_latest(self.registry)

    def error(self, name: str) -> None:
        self.errors.labels(name).inc()

    def on_prepared(self, prepared: PreparedCompaction) -> None:
        """A background job of a session has a compaction ready (called on its thread)."""
        self.background.prepared.inc()

    def on_event(self, session: str, event: Event, compressor: ContextCompressor) -> None:
        """Log an event of a session's manager (the compaction line at INFO) and count it."""
        if event.kind is EventKind.COMPACTION_FINISHED:
            report = _latest_report(compressor)
            tier = report.tier.value if report is not None and report.tier else "unknown"
            trigger = event.trigger.value if event.trigger else "unknown"
            before, after = event.tokens_before or 0, event.tokens_after or 0
            receipt = event.receipt
            log.info(
                "compaction session=%s trigger=%s tier=%s tokens=%d->%d ms=%.0f%s",
                session,
                trigger,
                tier,
                before,
                after,
                event.duration_ms or 0.0,
                f" cache_invalidated={receipt.invalidated_tokens}"
                f" break_even={receipt.break_even_requests or 'never'}"
                f" waited_ms={receipt.waited_ms:.0f}"
                f"{' background' if receipt.background else ''}"
                if receipt is not None
                else "",
            )
            self.compactions.labels(trigger, tier).inc()
            self.tokens_saved.inc(max(0, before - after))
            note = report.background if report is not None else None
            if note is not None and note.applied and receipt is not None:
                self.background.applied.inc()
                self.background.saved.inc(max(0.0, note.prepared_ms - receipt.waited_ms) / 1000)
        elif event.kind is EventKind.COMPACTION_DEFERRED:
            if event.trigger is Trigger.PREFLIGHT:  # as it is sent (real usage follows)
                self.background.deferred.inc()
            log.debug("session %s: %s", session, event.message)
        elif event.kind is EventKind.BACKGROUND_DISCARDED:
            self.background.discarded.labels(event.reason or "unknown").inc()
            log.info("session %s: %s", session, event.message)
        elif event.kind in (EventKind.WARNING, EventKind.COMPACTION_ABORTED):
            log.warning("session %s: %s", session, event.message)
        else:
            log.debug("session %s: %s", session, event.message)


def _latest_report(compressor: ContextCompressor) -> CompressionReport | None:
    compacted = getattr(compressor, "compacted", None)
    if compacted:
        return compacted[-1][1].report  # type: ignore[no-any-return]
    return None
