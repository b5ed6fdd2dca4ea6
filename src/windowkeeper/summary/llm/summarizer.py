"""The ``llm`` summarizer: any OpenAI-compatible endpoint via the official SDK (design §5, §7).

``LLMSummarizer.summarize`` never raises for provider trouble: every failure comes back
as ``SummaryOutcome(failure=...)`` classified by :mod:`windowkeeper.summary.failures`, so the
compressor can decide between aborting and the extractive fallback.

Choices worth knowing:
- ``max_retries=0`` on the SDK client: retries multiply stalls, and the compressor's
  cooldown ladder already spaces attempts out.
- No ``max_tokens`` on the wire by default: the budget is guidance in the prompt, and a
  hard cap cuts thinking models off mid-summary (that would then be a TRUNCATED
  failure). ``max_output_tokens`` sends one when a provider insists; keep it ≥ 2× the
  budget.
- A distinct summary model that fails with a non-aborting failure is retried once, per
  summarize call, on ``fallback_model`` (the main model). A summary model that does not
  exist (MODEL_NOT_FOUND) is skipped for the rest of this summarizer's life.
- Input too large for one call is summarized in chunks, each next chunk updating the
  running summary; the whole run shares one deadline (``total_timeout``).
"""

from __future__ import annotations

import contextlib
import ipaddress
import logging
import os
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from urllib.parse import urlsplit

from ...core.report import FailureKind
from ..failures import classify_exception, classify_non_json, classify_status, provider_errors
from ..protocol import WRITTEN_TITLES, SummaryFailure, SummaryOutcome, SummaryRequest
from ..redact import MaskedTurns, redact
from .backends import (
    Backend,
    ClientFactory,
    Completion,
    LiteLLMBackend,
    OpenAIBackend,
    default_client_factory,
    load_litellm,
)
from .config import LLMSummarizerConfig
from .output import is_refusal_text, shape_sections, written_part
from .prompt import (
    InputCap,
    bound_previous,
    build_prompt,
    kept_records,
    serialize_turns,
    strip_think,
    take_chunk,
)

log = logging.getLogger("windowkeeper.summary.llm.summarizer")

KEY_ENV_VARS = ("WINDOWKEEPER_SUMMARY_API_KEY", "OPENAI_API_KEY")
DEFAULT_BASE_URL = "https://api.openai.com/v1"
LOCAL_PLACEHOLDER_KEY = "windowkeeper-local"


def is_local_url(url: str) -> bool:
    """Loopback, private-network or dot-less hosts: local servers that need no real key."""
    host = (urlsplit(url).hostname or "").lower()
    if not host:
        return False
    if host == "localhost" or host.endswith((".localhost", ".local", ".internal")):
        return True
    try:
        address = ipaddress.ip_address(host)
    except ValueError:
        return "." not in host
    return address.is_loopback or address.is_private or address.is_unspecified


@dataclass
class LLMRun:
    """Diagnostics of the last summarize call (for reports and the CLI)."""

    model: str
    requests: int = 0
    chunks: int = 0
    fell_back: bool = False
    elapsed_s: float = 0.0


class LLMSummarizer:
    """Summaries from an LLM; implements :class:`windowkeeper.summary.protocol.Summarizer`."""

    name = "llm"

    def __init__(
        self,
        config: LLMSummarizerConfig,
        *,
        client_factory: ClientFactory | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.config = config
        self._factory: ClientFactory = client_factory or default_client_factory
        self._clock = clock
        self._litellm = load_litellm() if config.backend == "litellm" else None
        self._summary_model_missing = False
        self.last_run: LLMRun | None = None

    @property
    def base_url(self) -> str:
        return self.config.base_url or os.environ.get("OPENAI_BASE_URL") or DEFAULT_BASE_URL

    @property
    def endpoint(self) -> str:
        """How details name the endpoint (credentials in the URL are redacted)."""
        if self._litellm is not None and not self.config.base_url:
            return f"the summary provider for {self.config.model}"
        return f"the summary endpoint {redact(self.base_url)}"

    def api_key(self) -> str | None:
        if self.config.api_key:
            return self.config.api_key
        for name in KEY_ENV_VARS:
            value = os.environ.get(name, "").strip()
            if value:
                return value
        return None

    def summarize(self, request: SummaryRequest) -> SummaryOutcome:
        started = self._clock()
        key = self.api_key()
        if key is None and self._litellm is None and not is_local_url(self.base_url):
            return self._failed(
                FailureKind.NOT_CONFIGURED,
                f"no API key for {self.endpoint}: set WINDOWKEEPER_SUMMARY_API_KEY or "
                "--summary-api-key (or point --summary-base-url at a local server)",
            )
        run = LLMRun(model=self._models()[0])
        self.last_run = run
        try:
            with self._backend(key) as backend:
                result = self._run(backend, request, run)
        except provider_errors() as exc:  # building or closing the client
            result = classify_exception(exc, endpoint=self.endpoint)
        run.elapsed_s = self._clock() - started
        if isinstance(result, SummaryFailure):
            # The cause in the provider's words (status, message): the compressor's own
            # line names only the kind of failure.
            log.warning("summary call failed (%s): %s", result.kind.value, result.detail)
            return SummaryOutcome(failure=result, summarizer=self.name)
        return SummaryOutcome(body=result, summarizer=self.name)

    def _failed(self, kind: FailureKind, detail: str) -> SummaryOutcome:
        return SummaryOutcome(failure=SummaryFailure(kind, detail), summarizer=self.name)

    @contextlib.contextmanager
    def _backend(self, key: str | None) -> Iterator[Backend]:
        if self._litellm is not None:
            yield LiteLLMBackend(self._litellm, self.config, key, self._clock)
            return
        client = self._factory(
            base_url=self.base_url,
            api_key=key or LOCAL_PLACEHOLDER_KEY,
            timeout=self.config.timeout,
        )
        with client:
            yield OpenAIBackend(client, self.config, self._clock)

    def _models(self) -> list[str]:
        """The summary model, then the main model when it is distinct."""
        primary, fallback = self.config.model, self.config.fallback_model
        if not fallback or fallback == primary:
            return [primary]
        return [fallback] if self._summary_model_missing else [primary, fallback]

    def _run(self, backend: Backend, request: SummaryRequest, run: LLMRun) -> str | SummaryFailure:
        """Summarize all turns, in as many chunks as the input cap requires."""
        cap = InputCap.for_model(self.config.max_input_chars, self.config.context_length)
        handles = request.turns.handles() if isinstance(request.turns, MaskedTurns) else ()
        records = serialize_turns(request.turns, cap.record_limit, handles)
        deadline = self._clock() + self.config.deadline_seconds
        previous = written_part(request.previous_summary or "")
        running = bound_previous(previous, cap) if previous and previous.strip() else None
        kept = kept_records(request, cap)
        start = 0
        while True:
            end = take_chunk(records, start, build_prompt(request, [], running, kept), cap)
            prompt = build_prompt(request, records[start:end], running, kept)
            result = self._complete(backend, prompt, deadline, run)
            run.chunks += 1
            if isinstance(result, SummaryFailure):
                if run.chunks == 1 and end >= len(records):
                    return result
                where = f"chunk {run.chunks} (messages {start + 1}-{end} of {len(records)})"
                return SummaryFailure(result.kind, f"{result.detail} [{where}]")
            start = end
            if start >= len(records):
                shaped = shape_sections(result)
                if shaped is None:
                    return _failure(
                        FailureKind.FORMAT,
                        "the summary model's reply has none of the requested headings "
                        f"({', '.join(WRITTEN_TITLES)}); the extractive handoff was used",
                        Completion(text=result),
                    )
                return redact(shaped)
            running = bound_previous(result, cap)

    def _complete(
        self, backend: Backend, prompt: str, deadline: float, run: LLMRun
    ) -> str | SummaryFailure:
        """One call on the current model; on failure, once per run, on the main model."""
        models = self._models()
        model = run.model if run.fell_back else models[0]
        first = self._attempt(backend, model, prompt, deadline, run)
        if not isinstance(first, SummaryFailure):
            return first
        if run.fell_back or len(models) < 2 or first.kind.aborts:
            return first
        fallback = models[1]
        log.warning("summary model %s failed (%s); trying %s", model, first.kind.value, fallback)
        run.fell_back, run.model = True, fallback
        second = self._attempt(backend, fallback, prompt, deadline, run)
        if isinstance(second, SummaryFailure):
            return SummaryFailure(
                second.kind,
                f"{second.detail} (after the summary model {model} failed: {first.kind.value})",
            )
        if first.kind is FailureKind.MODEL_NOT_FOUND:
            self._summary_model_missing = True
        return second

    def _attempt(
        self, backend: Backend, model: str, prompt: str, deadline: float, run: LLMRun
    ) -> str | SummaryFailure:
        remaining = deadline - self._clock()
        if remaining <= 0:
            return SummaryFailure(
                FailureKind.TIMEOUT,
                f"the summary took longer than {self.config.deadline_seconds:g} s in total: "
                "raise --summary-timeout or lower max_input_chars",
            )
        run.requests += 1
        try:
            completion = backend.complete(
                model, prompt, min(self.config.timeout, remaining), deadline
            )
        except provider_errors() as exc:
            return classify_exception(exc, endpoint=self.endpoint)
        return self._judge(completion, model)

    def _judge(self, completion: Completion, model: str) -> str | SummaryFailure:
        """The answer's text, or why it cannot be used as a summary."""
        if completion.non_json is not None:
            return classify_non_json(completion.non_json, endpoint=self.endpoint)
        if completion.error is not None:
            return classify_status(200, {"error": completion.error}, endpoint=self.endpoint)
        if completion.refusal:
            return _failure(FailureKind.REFUSAL, f"{model} refused to summarize", completion)
        if completion.finish_reason == "length":
            return _failure(
                FailureKind.TRUNCATED,
                f"{model} stopped at its output limit (finish_reason=length); the partial "
                "summary was discarded: use a model with a larger output limit",
                None,
            )
        if completion.finish_reason == "content_filter":
            return _failure(FailureKind.REFUSAL, f"{model}'s content filter blocked it", None)
        if completion.streamed and completion.finish_reason is None:
            return _failure(
                FailureKind.NETWORK, f"the stream from {model} ended before it finished", None
            )
        text = strip_think(completion.text).strip()
        if not text:
            return _failure(FailureKind.EMPTY, f"{model} returned an empty summary", None)
        if is_refusal_text(text):
            return _failure(FailureKind.REFUSAL, f"{model} refused to summarize", completion)
        return redact(text)


def _failure(kind: FailureKind, what: str, completion: Completion | None) -> SummaryFailure:
    said = ""
    if completion is not None:
        quote = " ".join((completion.refusal or completion.text).split())[:100]
        said = f" ({quote!r})" if quote else ""
    hint = {
        FailureKind.REFUSAL: "try another summary model",
        FailureKind.EMPTY: "check the model; reasoning models may need more time",
    }.get(kind, "")
    return SummaryFailure(kind, f"{what}{said}" + (f": {hint}" if hint else ""))
