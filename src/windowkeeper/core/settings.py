"""Effective settings: one YAML file + environment overrides, validated, with provenance.

The file (design §10) is the first of:

1. ``--config FILE`` (the ``path`` argument),
2. ``$WINDOWKEEPER_CONFIG``,
3. ``./windowkeeper.yaml``,
4. ``$XDG_CONFIG_HOME/windowkeeper/config.yaml`` (``~/.config/windowkeeper/config.yaml``).

An explicitly named file (1, 2) must exist; the others are optional, and with no file the
defaults apply. Environment variables ``WINDOWKEEPER_<SECTION>__<KEY>`` (nested sections
joined by ``__`` too, e.g. ``WINDOWKEEPER_AUXILIARY__COMPRESSION__MODEL``) override the
file; their values are read as YAML scalars (``0.6``, ``true``, ``null``) or, for maps
such as ``compression.model_thresholds``, as a YAML/JSON mapping that replaces the file's
whole map. String settings take the variable's text verbatim (an empty value or ``null``
means unset). ``WINDOWKEEPER_*`` variables without ``__`` are not overrides.

Every effective value records where it came from: ``default``, the file path, or the
environment variable's name. Model context windows are never guessed: ``model.
context_length`` is configured, or found by the caller from model metadata (design §2).
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Annotated, Any, Literal, NamedTuple

import yaml
from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    PrivateAttr,
    ValidationError,
    field_serializer,
    field_validator,
)

from .cache import CachePrices
from .config import (
    CompressionConfig,
    apply_threshold_cap,
    compute_threshold_tokens,
    resolve_model_threshold,
)
from .errors import ConfigError
from .setting_keys import assign, describe, env_overrides, flatten_keys, leaves

ENV_PREFIX = "WINDOWKEEPER_"
CONFIG_ENV = "WINDOWKEEPER_CONFIG"
LOCAL_FILE = "windowkeeper.yaml"
DEFAULT_SOURCE = "default"
STORE_SCHEMES = ("sqlite://", "postgresql://", "postgres://")

_DEFAULTS = CompressionConfig()

Fraction = Annotated[float, Field(gt=0, le=1)]
Count = Annotated[int, Field(ge=0)]
Positive = Annotated[int, Field(ge=1)]


class _Section(BaseModel):
    # Unknown keys are errors: a typo must not silently fall back to a default.
    model_config = ConfigDict(extra="forbid", frozen=True, protected_namespaces=())


class ContextSettings(_Section):
    engine: str = "compressor"


class CachePriceRow(_Section):
    """One row of ``compression.cache_prices``: cache read and write prices per token,
    relative to one uncached input token."""

    read: Annotated[float, Field(ge=0)]
    write: Annotated[float, Field(ge=0)]


class CompressionSettings(_Section):
    """``compression.*``; defaults come from :class:`CompressionConfig` (one source)."""

    enabled: bool = _DEFAULTS.enabled
    threshold: Fraction = _DEFAULTS.threshold
    target_ratio: Fraction = _DEFAULTS.target_ratio
    prune_only_ratio: Fraction = _DEFAULTS.prune_only_ratio
    protect_first_n: Count = _DEFAULTS.protect_first_n
    protect_last_n: Count = _DEFAULTS.protect_last_n
    min_tail_messages: Positive = _DEFAULTS.min_tail_messages
    tail_soft_ceiling: Annotated[float, Field(ge=1.0)] = _DEFAULTS.tail_soft_ceiling
    threshold_tokens_cap: Positive | None = _DEFAULTS.threshold_tokens_cap
    model_thresholds: dict[str, Fraction] = Field(default_factory=dict)
    image_tokens: Count = _DEFAULTS.image_tokens
    prune_min_chars: Count = _DEFAULTS.prune_min_chars
    head_prune_min_chars: Count = _DEFAULTS.head_prune_min_chars
    args_truncate_over: Positive = _DEFAULTS.args_truncate_over
    args_head_chars: Count = _DEFAULTS.args_head_chars
    user_message_ratio: Fraction = _DEFAULTS.user_message_ratio
    user_message_min_tokens: Count = _DEFAULTS.user_message_min_tokens
    user_messages_ratio: Fraction = _DEFAULTS.user_messages_ratio
    summary_min_tokens: Positive = _DEFAULTS.summary_min_tokens
    summary_max_tokens: Positive = _DEFAULTS.summary_max_tokens
    summary_ratio: Fraction = _DEFAULTS.summary_ratio
    summary_window_ratio: Fraction = _DEFAULTS.summary_window_ratio
    min_savings_ratio: Annotated[float, Field(ge=0, lt=1)] = _DEFAULTS.min_savings_ratio
    abort_on_summary_failure: bool = _DEFAULTS.abort_on_summary_failure
    allow_small_summary_model: bool = _DEFAULTS.allow_small_summary_model
    in_place: bool = _DEFAULTS.in_place
    hygiene_threshold: Annotated[float, Field(ge=0.10, le=0.99)] = _DEFAULTS.hygiene_threshold
    hygiene_hard_message_limit: Positive = _DEFAULTS.hygiene_hard_message_limit
    max_attempts: Positive = _DEFAULTS.max_attempts
    background: bool | None = _DEFAULTS.background
    background_ratio: Annotated[float, Field(gt=0, lt=1)] = _DEFAULTS.background_ratio
    background_hard_ratio: Annotated[float, Field(gt=0, le=1)] = _DEFAULTS.background_hard_ratio
    background_workers: Positive = _DEFAULTS.background_workers
    cache_prices: dict[str, CachePriceRow] = Field(
        default_factory=lambda: {
            name: CachePriceRow(read=row.read, write=row.write)
            for name, row in _DEFAULTS.cache_prices.items()
        }
    )

    @field_validator("target_ratio")
    @classmethod
    def _clamp_ratio(cls, value: float) -> float:
        # design §4: clamped, not rejected; clamping here makes `config show` truthful.
        return min(0.80, max(0.10, value))


class SummaryModelSettings(_Section):
    """``auxiliary.compression``: the summarizer endpoint (its window must be >= the main)."""

    model: str | None = None
    base_url: str | None = None
    timeout: Annotated[float, Field(gt=0)] = 120.0  # seconds; the LLM summarizer's default
    api_key_env: str | None = None  # the variable's name; the key itself is never stored


class AuxiliarySettings(_Section):
    compression: SummaryModelSettings = Field(default_factory=SummaryModelSettings)


class ModelSettings(_Section):
    name: str | None = None
    context_length: Positive | None = None
    max_tokens: Positive | None = None
    provider: str | None = None


class StoreSettings(_Section):
    url: str | None = None  # None: the store's own default location

    @field_validator("url")
    @classmethod
    def _known_scheme(cls, value: str | None) -> str | None:
        if value is not None and not value.startswith(STORE_SCHEMES):
            raise ValueError(f"must start with one of {', '.join(STORE_SCHEMES)}")
        return value


class SettingEntry(NamedTuple):
    key: str
    value: Any
    source: str


class GatewaySection(_Section):
    """``gateway``: defaults of ``windowkeeper serve`` (its command-line options win).

    ``api_keys`` are the keys clients must present (shown masked by ``config``); they are
    also read from ``WINDOWKEEPER_GATEWAY_KEYS`` (comma-separated) by ``serve``.
    """

    upstream: str | None = None
    anthropic_upstream: str | None = None
    host: str = "127.0.0.1"
    port: Annotated[int, Field(ge=1, le=65_535)] = 8787
    model_context_lengths: dict[str, Positive] = Field(default_factory=dict)
    upstream_api_key_env: str | None = None
    anthropic_api_key_env: str | None = None
    api_keys: list[str] = Field(default_factory=list)
    max_body_mib: Annotated[float, Field(gt=0)] = 32.0
    max_session_mib: Annotated[float, Field(gt=0)] = 1024.0
    recall_rounds: Annotated[int, Field(ge=0, le=8)] = 2
    http: Literal["httptools", "h11"] = "httptools"
    body_timeout_seconds: Annotated[float, Field(gt=0)] = 5.0
    """A request body that stops arriving this long is answered 408 (the keep-alive
    timeout by default)."""

    @field_serializer("api_keys")
    def _masked(self, keys: list[str]) -> list[str]:
        return ["***"] * len(keys)


class Settings(_Section):
    """Typed effective settings; :meth:`source` tells where each value came from."""

    context: ContextSettings = Field(default_factory=ContextSettings)
    compression: CompressionSettings = Field(default_factory=CompressionSettings)
    auxiliary: AuxiliarySettings = Field(default_factory=AuxiliarySettings)
    model: ModelSettings = Field(default_factory=ModelSettings)
    store: StoreSettings = Field(default_factory=StoreSettings)
    gateway: GatewaySection = Field(default_factory=GatewaySection)

    _sources: dict[str, str] = PrivateAttr(default_factory=dict)
    _config_file: Path | None = PrivateAttr(default=None)

    @property
    def config_file(self) -> Path | None:
        """The YAML file read, or None when only defaults and env applied."""
        return self._config_file

    def source(self, key: str) -> str:
        """``default``, the file path, or the env var name that set dotted ``key``."""
        return self._sources.get(key, DEFAULT_SOURCE)

    def entries(self) -> list[SettingEntry]:
        """Every leaf setting in declaration order, with its value and source."""
        values = leaves(Settings, self.model_dump())
        return [SettingEntry(key, value, self.source(key)) for key, value in values.items()]

    def compression_config(self) -> CompressionConfig:
        """The compressor's frozen config built from these settings.

        A dataclass field without a setting keeps its dataclass default (a test keeps
        the two in step, so that is only ever a transient state).
        """
        known = CompressionSettings.model_fields
        names = [f.name for f in dataclasses.fields(CompressionConfig) if f.name in known]
        values = {name: getattr(self.compression, name) for name in names}
        values["cache_prices"] = {
            name: CachePrices(read=row.read, write=row.write)
            for name, row in self.compression.cache_prices.items()
        }
        return CompressionConfig(**values)

    def effective_threshold(self) -> float:
        """``compression.threshold``, or the ``model_thresholds`` entry matching the model."""
        return resolve_model_threshold(
            self.model.name,
            self.compression.model_thresholds,
            self.compression.threshold,
            self.model.provider,
        )

    def threshold_tokens(self) -> int | None:
        """The compaction trigger in tokens, or None while ``model.context_length`` is unset."""
        window = self.model.context_length
        if window is None:
            return None
        trigger = compute_threshold_tokens(
            window, self.effective_threshold(), self.model.max_tokens
        )
        return apply_threshold_cap(trigger, self.compression.threshold_tokens_cap, window)


# --- loading ----------------------------------------------------------------------------


def find_config_file(
    path: str | Path | None = None,
    env: Mapping[str, str] = os.environ,
    *,
    cwd: Path | None = None,
) -> Path | None:
    """The config file to read (see the module docstring), or None."""
    for named, origin in ((path, "--config"), (env.get(CONFIG_ENV), CONFIG_ENV)):
        if named is not None and str(named) != "":
            chosen = Path(named).expanduser()
            if not chosen.is_file():
                raise ConfigError(f"config file not found: {chosen} (named by {origin})")
            return chosen
    candidates = [(cwd or Path.cwd()) / LOCAL_FILE]
    xdg = env.get("XDG_CONFIG_HOME")
    home = env.get("HOME")
    if xdg:
        candidates.append(Path(xdg) / "windowkeeper" / "config.yaml")
    elif home:
        candidates.append(Path(home) / ".config" / "windowkeeper" / "config.yaml")
    return next((candidate for candidate in candidates if candidate.is_file()), None)


def load_settings(
    path: str | Path | None = None,
    env: Mapping[str, str] = os.environ,
    *,
    cwd: Path | None = None,
) -> Settings:
    """Read the config file and env overrides into validated :class:`Settings`.

    Raises :class:`ConfigError` naming the key, where it came from and the bad value.
    """
    config_file = find_config_file(path, env, cwd=cwd)
    raw = read_config_file(config_file) if config_file is not None else {}
    sources = dict.fromkeys(flatten_keys(raw, Settings), str(config_file))
    for name, dotted, value in env_overrides(Settings, env, ENV_PREFIX):
        assign(raw, dotted, value, config_file)
        sources[dotted] = name
    try:
        settings = Settings.model_validate(raw)
    except ValidationError as exc:
        raise ConfigError(describe(exc, sources, DEFAULT_SOURCE)) from None
    settings._sources = sources
    settings._config_file = config_file
    try:
        settings.compression_config()  # cross-field checks of the dataclass itself
    except ConfigError as exc:
        raise ConfigError(f"{exc} (config file: {config_file or 'none'})") from None
    return settings


def read_config_file(path: Path) -> dict[str, Any]:
    """The YAML mapping in ``path`` (an empty file is an empty mapping)."""
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read config file: {exc.strerror}") from None
    except UnicodeDecodeError:
        raise ConfigError(f"{path}: config file is not UTF-8 text") from None
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" at line {mark.line + 1}" if mark is not None else ""
        problem = getattr(exc, "problem", None) or str(exc)
        raise ConfigError(f"{path}: invalid YAML{where}: {problem}") from None
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise ConfigError(f"{path}: expected a mapping of sections, got {type(data).__name__}")
    return data
