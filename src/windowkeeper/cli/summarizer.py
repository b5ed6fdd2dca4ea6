"""Command-line options that choose and configure the summarizer (``--summarizer llm``)."""

from __future__ import annotations

import dataclasses
import functools
import inspect
import typing
from collections.abc import Callable
from dataclasses import dataclass
from typing import Annotated, Any, Literal, TypeVar

import typer

from ..core.errors import ConfigError
from ..summary.extractive.summarizer import ExtractiveSummarizer
from ..summary.feasibility import resolve_context_length
from ..summary.llm.config import LLMSummarizerConfig
from ..summary.llm.summarizer import LLMSummarizer
from ..summary.protocol import Summarizer

SummarizerOpt = Annotated[
    str,
    typer.Option(
        "--summarizer", metavar="extractive|llm", help="extractive (offline, default) or llm."
    ),
]
SummaryModelOpt = Annotated[
    str | None,
    typer.Option("--summary-model", metavar="MODEL", help="Model that writes the handoff (llm)."),
]
SummaryBaseUrlOpt = Annotated[
    str | None,
    typer.Option(
        "--summary-base-url", metavar="URL", help="OpenAI-compatible base URL of the summary model."
    ),
]
SummaryApiKeyOpt = Annotated[
    str | None,
    typer.Option(
        "--summary-api-key",
        metavar="KEY",
        help="API key (else WINDOWKEEPER_SUMMARY_API_KEY, else OPENAI_API_KEY).",
    ),
]
SummaryTimeoutOpt = Annotated[
    float, typer.Option("--summary-timeout", help="Seconds for one summary call.")
]
SummaryContextOpt = Annotated[
    int | None,
    typer.Option("--summary-context-length", help="Summary model window (else looked up)."),
]
SummaryStreamOpt = Annotated[
    bool, typer.Option("--summary-stream", help="Stream the summary response.")
]
SummaryBackendOpt = Annotated[
    str,
    typer.Option(
        "--summary-backend", metavar="openai|litellm", help="openai (official SDK) or litellm."
    ),
]
SummaryMaxInputOpt = Annotated[
    int, typer.Option("--summary-max-input-chars", help="Cap on one summary prompt.")
]
AllowSmallOpt = Annotated[
    bool,
    typer.Option("--allow-small-summary-model", help="Accept a summary window under 64K."),
]


@dataclass(frozen=True)
class SummarizerChoice:
    """The ``--summarizer``/``--summary-*`` options as given on the command line."""

    kind: str = "extractive"
    model: str | None = None
    base_url: str | None = None
    api_key: str | None = None
    timeout: float = 120.0
    context_length: int | None = None
    stream: bool = False
    backend: str = "openai"
    max_input_chars: int = 160_000
    allow_small: bool = False


_OPTIONS = (
    ("summarizer", SummarizerOpt),
    ("summary_model", SummaryModelOpt),
    ("summary_base_url", SummaryBaseUrlOpt),
    ("summary_api_key", SummaryApiKeyOpt),
    ("summary_timeout", SummaryTimeoutOpt),
    ("summary_context_length", SummaryContextOpt),
    ("summary_stream", SummaryStreamOpt),
    ("summary_backend", SummaryBackendOpt),
    ("summary_max_input_chars", SummaryMaxInputOpt),
    ("allow_small_summary_model", AllowSmallOpt),
)
"""The options' parameters, in the order of :class:`SummarizerChoice`'s fields."""
DEFAULT_CHOICE = SummarizerChoice()
"""The options' defaults: the default of a command's ``choice`` parameter (which
:func:`summarizer_options` always passes)."""
F = TypeVar("F", bound=Callable[..., None])
COMMON = 6
"""The options every summarizing command takes (the rest are ``compress``'s)."""


def summarizer_options(count: int = len(_OPTIONS)) -> Callable[[F], F]:
    """Give a command the first ``count`` ``--summarizer``/``--summary-*`` options in
    place of its ``choice: SummarizerChoice`` parameter (where they are listed in its
    ``--help``), gathered into the choice when it runs.

    Why: typer reads a command's options from its signature, so each command spelled
    every option out and built the choice itself; the options are written here once."""

    def decorate(command: F) -> F:
        hints = typing.get_type_hints(command, include_extras=True)
        fields = dataclasses.fields(SummarizerChoice)[:count]
        options = [
            inspect.Parameter(name, inspect.Parameter.POSITIONAL_OR_KEYWORD,
                              default=field.default, annotation=option)
            for (name, option), field in zip(_OPTIONS, fields, strict=False)
        ]  # fmt: skip
        params: list[inspect.Parameter] = []
        for param in inspect.signature(command).parameters.values():
            given = param.replace(annotation=hints[param.name])
            params.extend(options if param.name == "choice" else [given])

        @functools.wraps(command)
        def run(**given: Any) -> None:
            values = [given.pop(name) for name, _ in _OPTIONS[:count]]
            command(choice=SummarizerChoice(*values), **given)

        run.__signature__ = inspect.Signature(params)  # type: ignore[attr-defined]
        run.__annotations__ = {p.name: p.annotation for p in params}
        return typing.cast(F, run)

    return decorate


def build_summarizer(
    choice: SummarizerChoice, *, main_model: str | None
) -> tuple[Summarizer, int | None]:
    """The summarizer and, for an LLM one, its resolved window (``None`` when unknown)."""
    if choice.kind == "extractive":
        return ExtractiveSummarizer(), None
    if choice.kind != "llm":
        raise ConfigError(f"--summarizer must be 'extractive' or 'llm', got {choice.kind!r}")
    if not choice.model:
        raise ConfigError("--summarizer llm needs --summary-model")
    backend: Literal["openai", "litellm"] = "litellm" if choice.backend == "litellm" else "openai"
    if choice.backend not in ("openai", "litellm"):
        raise ConfigError(f"--summary-backend must be openai or litellm, got {choice.backend!r}")
    config = LLMSummarizerConfig(
        model=choice.model,
        base_url=choice.base_url,
        api_key=choice.api_key,
        timeout=choice.timeout,
        fallback_model=main_model if main_model and main_model != choice.model else None,
        context_length=choice.context_length,
        max_input_chars=choice.max_input_chars,
        stream=choice.stream,
        backend=backend,
    )
    summarizer = LLMSummarizer(config)
    window = resolve_context_length(
        choice.model,
        configured=choice.context_length,
        base_url=summarizer.base_url,
        api_key=summarizer.api_key(),
        timeout=min(10.0, choice.timeout),
    )
    if window is not None and config.context_length is None:
        summarizer = LLMSummarizer(dataclasses.replace(config, context_length=window))
    return summarizer, window
