"""Reading a command's input and building its compressor (shared by compress and inspect)."""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path
from typing import Annotated

import typer

from ..adapters.formats import Format, load_tools
from ..core.config import CompressionConfig, resolve_model_threshold, threshold_override
from ..core.errors import ConfigError
from ..core.messages import Message, ToolSchema, conversation_warnings
from ..core.settings import Settings, load_settings
from ..core.tokens import TextCounter, estimate_request_tokens
from ..engine.compressor import ContextCompressor
from ..summary.protocol import Summarizer
from .common import exact_counter, repaired, resolve_window
from .sessions import Input, StoredSource, read_input
from .summarizer import SummarizerChoice, build_summarizer

ExactTokensOpt = Annotated[
    bool, typer.Option("--exact-tokens", help="Count with a locally cached tokenizer.")
]


@dataclass(frozen=True)
class Loaded:
    """A conversation read from the command line's input, with its compressor."""

    messages: list[Message]
    tools: list[ToolSchema] | None
    compressor: ContextCompressor
    config: CompressionConfig
    context_length: int
    max_tokens: int | None
    source: Input | None = None
    notes: tuple[str, ...] = ()
    """``warning:``/``note:`` lines about the input and the trigger, shown once by the
    command after its result (an error or abort line stands alone)."""

    def request_tokens(self, messages: list[Message]) -> int:
        """Estimated prompt tokens of ``messages`` with the tools, as the compressor counts."""
        return estimate_request_tokens(
            messages,
            self.tools,
            image_tokens=self.config.image_tokens,
            count=self.compressor.token_counter,
        )


def build_compressor(
    config: CompressionConfig,
    *,
    context_length: int,
    max_tokens: int | None,
    model: str | None,
    tools: list[ToolSchema] | None,
    summarizer: Summarizer | None = None,
    summary_context_length: int | None = None,
    token_counter: TextCounter | None = None,
) -> ContextCompressor:
    """The compressor the commands use (a seam: tests inject another summarizer here)."""
    return ContextCompressor(
        config,
        context_length=context_length,
        max_tokens=max_tokens,
        model=model,
        tools=tools,
        summarizer=summarizer,
        summary_context_length=summary_context_length,
        token_counter=token_counter,
    )


def threshold_note(
    config: CompressionConfig, window: int, reserve: int | None, model: str | None
) -> str | None:
    """The line that says the 64K minimum trigger overrides the configured ratio (design §2)."""
    ratio = resolve_model_threshold(model, config.model_thresholds, config.threshold)
    return threshold_override(window, ratio, reserve)


def _config(
    settings: Settings, threshold: float | None, choice: SummarizerChoice
) -> CompressionConfig:
    """The config file's compression settings with the command line's overrides."""
    config = settings.compression_config()
    return replace(
        config,
        threshold=config.threshold if threshold is None else threshold,
        allow_small_summary_model=choice.allow_small or config.allow_small_summary_model,
    )


def _reserve(max_tokens: int | None, settings: Settings) -> int | None:
    """Tokens kept free for the answer: ``--max-tokens``, else the config's."""
    reserve = max_tokens if max_tokens is not None else settings.model.max_tokens
    if reserve is not None and reserve < 0:
        raise ConfigError(f"--max-tokens must be >= 0, got {reserve}")
    return reserve


def _summarizer(choice: SummarizerChoice, model: str | None) -> tuple[Summarizer, int | None]:
    """:func:`build_summarizer`, with a warning when an LLM summarizer's window is unknown."""
    summarizer, summary_window = build_summarizer(choice, main_model=model)
    if choice.kind == "llm" and summary_window is None:
        typer.echo(
            "warning: the summary model's context window is unknown; set "
            "--summary-context-length so the trigger can be checked against it",
            err=True,
        )
    return summarizer, summary_window


def load(
    source: str | None,
    *,
    context_length: int | None,
    max_tokens: int | None,
    threshold: float | None,
    tools_file: Path | None,
    choice: SummarizerChoice | None = None,
    stored: StoredSource | None = None,
    config_file: Path | None = None,
    exact_tokens: bool = False,
    fmt: Format = Format.AUTO,
) -> Loaded:
    """Validate the options, read the conversation and build its compressor.

    Options given on the command line win over the config file (``--config``, else the
    documented locations), which wins over the defaults.
    """
    settings = load_settings(config_file)
    choice = choice or SummarizerChoice()
    config = _config(settings, threshold, choice)
    read = read_input(source, stored, fmt)
    conversation = read.conversation
    model = conversation.model or settings.model.name
    window = resolve_window(context_length, settings, model)
    reserve = _reserve(max_tokens, settings)
    tools = load_tools(tools_file) if tools_file is not None else conversation.tools
    summarizer, summary_window = _summarizer(choice, model)
    compressor = build_compressor(
        config,
        context_length=window,
        max_tokens=reserve,
        model=model,
        tools=tools,
        summarizer=summarizer,
        summary_context_length=summary_window,
        token_counter=exact_counter(model) if exact_tokens else None,
    )
    notes = [f"warning: {w}" for w in conversation_warnings(conversation.messages)]
    # Only a ratio the user asked for on the command line is worth a line when the 64K
    # minimum overrides it; on every small window by default it was noise on every run.
    override = threshold_note(config, window, reserve, model) if threshold is not None else None
    notes += [f"note: {override}"] if override else []
    messages = repaired(conversation.messages)
    return Loaded(messages, tools, compressor, config, window, reserve, read, tuple(notes))
