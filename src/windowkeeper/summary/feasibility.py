"""Can the summary model read what it will be asked to summarize? (design §2, §6)

Two steps, run once at start (not per compaction):

1. :func:`resolve_context_length` finds the summary model's window from explicit
   configuration, then from installed metadata (LiteLLM's model map, when LiteLLM is
   importable), then from the endpoint's ``/models`` listing. There is no hand-written
   model table: unknown stays ``None``.
2. :func:`check_feasibility` compares it with the main model's window and lowers the
   compaction trigger when the summary model is smaller.

The lowering formula. At the trigger ``T`` the compressor summarizes everything except
the verbatim tail, whose budget is ``T x target_ratio``, so the summarizer input is at most
``T x (1 - target_ratio)`` tokens. The LLM summarizer keeps its prompt within
``INPUT_WINDOW_SHARE`` (60%) of the summary window ``S`` (the rest holds the template,
the previous summary and the answer). Hence::

    T_new = min(T, floor(S x 0.6 / (1 - target_ratio)))

(with the default ratio 0.20: ``S x 0.75``). Chunking would still cope with a larger
input, but one call is faster and summarizes better than a chain of updates.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass

from ..core.config import coerce_positive_int
from ..core.errors import ConfigError
from .llm.backends import import_litellm
from .llm.prompt import INPUT_WINDOW_SHARE

log = logging.getLogger("windowkeeper.summary.feasibility")

MINIMUM_SUMMARY_WINDOW = 64_000
WINDOW_FIELDS = (
    "context_length",
    "context_window",
    "max_model_len",
    "max_context_length",
    "max_input_tokens",
    "max_position_embeddings",
)
"""Fields of a ``/models`` entry (OpenRouter, vLLM, LM Studio, LiteLLM proxy...) that
state the window, most specific first."""


@dataclass(frozen=True)
class Feasibility:
    """The (possibly lowered) trigger and what the user should be told about it."""

    threshold_tokens: int
    warnings: tuple[str, ...] = ()


def resolve_context_length(
    model: str,
    *,
    configured: int | None = None,
    base_url: str | None = None,
    api_key: str | None = None,
    timeout: float = 10,
) -> int | None:
    """The model's window in tokens, or ``None`` when no source states it."""
    explicit = coerce_positive_int(configured)
    if explicit is not None:
        return explicit
    known = _from_litellm(model)
    if known is not None:
        return known
    if base_url:
        return _from_models_endpoint(model, base_url, api_key, timeout)
    return None


def _from_litellm(model: str) -> int | None:
    """The window from LiteLLM's bundled model map (no network: it ships with the wheel).

    The map is read directly: LiteLLM's lookup helper prints to stdout for unknown
    models, which would corrupt a command's output.
    """
    litellm = import_litellm()
    cost = getattr(litellm, "model_cost", None) if litellm is not None else None
    if not isinstance(cost, Mapping):
        return None
    info = cost.get(model)
    if info is None and "/" in model:
        info = cost.get(model.split("/", 1)[1])  # "openai/gpt-4o" is listed as "gpt-4o"
    if not isinstance(info, Mapping):
        return None
    return coerce_positive_int(info.get("max_input_tokens")) or coerce_positive_int(
        info.get("max_tokens")
    )


def _from_models_endpoint(
    model: str, base_url: str, api_key: str | None, timeout: float
) -> int | None:
    import httpx  # here: only a /models look-up needs it, and it is slow to import

    url = base_url.rstrip("/") + "/models"
    headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
    try:
        with httpx.Client(timeout=timeout) as client:
            response = client.get(url, headers=headers)
            response.raise_for_status()
            payload = response.json()
    except (httpx.HTTPError, ValueError) as exc:
        log.info("could not read %s for the window of %s: %s", url, model, exc)
        return None
    return window_from_listing(model, payload)


def window_from_listing(model: str, payload: object) -> int | None:
    """The window of ``model`` in a ``/models`` payload (``{"data": [...]}`` or a list)."""
    entries = payload.get("data") if isinstance(payload, Mapping) else payload
    if not isinstance(entries, list):
        return None
    candidates = [e for e in entries if isinstance(e, Mapping)]
    exact = [e for e in candidates if e.get("id") == model]
    # "org/model" ids on routers: accept a unique suffix match when there is no exact one
    suffix = [e for e in candidates if str(e.get("id", "")).endswith("/" + model)]
    chosen = exact or (suffix if len(suffix) == 1 else [])
    for entry in chosen:
        for holder in (entry, entry.get("top_provider"), entry.get("meta")):
            if not isinstance(holder, Mapping):
                continue
            for name in WINDOW_FIELDS:
                value = coerce_positive_int(holder.get(name))
                if value is not None:
                    return value
    return None


def lowered_threshold(
    threshold_tokens: int, summary_context_length: int, target_ratio: float = 0.20
) -> int:
    """``min(T, floor(S x 0.6 / (1 - target_ratio)))`` (see the module docstring)."""
    ratio = min(0.80, max(0.10, target_ratio))
    fit = int(summary_context_length * INPUT_WINDOW_SHARE / (1.0 - ratio))
    return max(1, min(threshold_tokens, fit))


def check_feasibility(
    main_context_length: int,
    summary_context_length: int | None,
    threshold_tokens: int,
    *,
    minimum: int = MINIMUM_SUMMARY_WINDOW,
    allow_small: bool = False,
    target_ratio: float = 0.20,
    summary_model: str | None = None,
) -> Feasibility:
    """Check that the summary model's window can hold the summarizer input.

    Raises:
        ConfigError: the summary window is below ``minimum`` and ``allow_small`` is off.
    """
    label = f"summary model {summary_model}" if summary_model else "the summary model"
    if summary_context_length is None:
        return Feasibility(
            threshold_tokens,
            (
                f"the context length of {label} is unknown; assuming it can hold the "
                "summarizer input (set --summary-context-length to check it)",
            ),
        )
    if summary_context_length < minimum and not allow_small:
        raise ConfigError(
            f"{label} has a {summary_context_length:,}-token window, below the "
            f"{minimum:,}-token minimum for summaries: choose a larger summary model "
            "(--summary-model / auxiliary.compression.model), correct "
            "--summary-context-length, or pass --allow-small-summary-model"
        )
    if summary_context_length >= main_context_length:
        return Feasibility(threshold_tokens)
    lowered = lowered_threshold(threshold_tokens, summary_context_length, target_ratio)
    change = (
        f"lowered the compaction trigger from {threshold_tokens:,} to {lowered:,} tokens"
        if lowered < threshold_tokens
        else f"the trigger of {threshold_tokens:,} tokens still fits"
    )
    return Feasibility(
        lowered,
        (
            f"{label} has a smaller window ({summary_context_length:,} tokens) than the "
            f"main model ({main_context_length:,}); {change} so its input fits",
        ),
    )
