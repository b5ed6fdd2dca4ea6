"""``windowkeeper serve``: run the transparent gateway (design §8) with uvicorn.

Mounted by the main app with ``app.command("serve")(serve_command)``. Listens on
127.0.0.1 by default. Without gateway keys (``gateway.api_keys`` or
``$WINDOWKEEPER_GATEWAY_KEYS``) anyone who can reach it may use it, and with
``--upstream-api-key-env`` spend the configured key; keys are never taken on the
command line (other users could read them in the process list).
"""

from __future__ import annotations

import copy
import importlib.util
import os
import signal
import threading
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from types import FrameType
from typing import TYPE_CHECKING, Annotated, Any

import typer

from ..core.errors import ConfigError
from ..core.settings import Settings, load_settings
from .common import fail, user_errors

if TYPE_CHECKING:
    from ..gateway import GatewayApp
    from ..gateway.settings import GatewaySettings

LOOPBACK = frozenset({"127.0.0.1", "::1", "localhost"})
LOG_LEVELS = ("critical", "error", "warning", "info", "debug", "trace")
SHUTDOWN_GRACE_SECONDS = 10
"""In-flight requests get this long to finish after SIGTERM/SIGINT."""


UpstreamOpt = Annotated[
    str | None,
    typer.Option("--upstream", help="The upstream OpenAI-compatible base URL, e.g. "
                 "https://api.openai.com/v1 (else the config's gateway.upstream)."),
]  # fmt: skip
AnthropicOpt = Annotated[
    str | None,
    typer.Option("--anthropic-upstream", help="The upstream Anthropic base URL without /v1, "
                 "e.g. https://api.anthropic.com (else gateway.anthropic_upstream); serves "
                 "/v1/messages."),
]  # fmt: skip
HostOpt = Annotated[
    str | None, typer.Option(help="Interface to listen on [config gateway.host, 127.0.0.1].")
]
PortOpt = Annotated[int | None, typer.Option(help="Port to listen on [config, else 8787].")]
ContextOpt = Annotated[
    int | None,
    typer.Option("--context-length", min=1, help="Context window (tokens) of every model "
                 "without a more specific setting."),
]  # fmt: skip
ModelContextOpt = Annotated[
    list[str] | None,
    typer.Option("--model-context", help="MODEL=TOKENS: the window of one model "
                 "(repeatable; a key contained in the model name also matches)."),
]  # fmt: skip
ConfigOpt = Annotated[
    Path | None, typer.Option("--config", help="YAML config file (compression settings).")
]
StoreUrlOpt = Annotated[
    str | None,
    typer.Option("--store", help="Persist sessions: sqlite:///PATH, postgresql://… or "
                 "memory:// (default: the config's store.url, else in memory only)."),
]  # fmt: skip
ApiKeyEnvOpt = Annotated[
    str | None,
    typer.Option("--upstream-api-key-env", help="Name of the environment variable holding "
                 "the upstream API key (default: pass the client's Authorization header "
                 "through)."),
]  # fmt: skip
AnthropicKeyEnvOpt = Annotated[
    str | None,
    typer.Option("--anthropic-api-key-env", help="Name of the environment variable holding "
                 "the Anthropic API key (default: pass the client's x-api-key through)."),
]  # fmt: skip
LogLevelOpt = Annotated[str, typer.Option(help="uvicorn log level.")]
HttpOpt = Annotated[
    str | None,
    typer.Option("--http", help="uvicorn's HTTP/1.1 parser: httptools (the least CPU per "
                 "request; the gateway extra installs it) or h11 [config gateway.http, "
                 "httptools]."),
]  # fmt: skip
BackgroundOpt = Annotated[
    bool | None,
    typer.Option("--background/--no-background", help="Prepare compactions off the request "
                 "path [config compression.background; on with an LLM summarizer]."),
]  # fmt: skip
HTTP_IMPLEMENTATIONS = ("httptools", "h11")


def serve_command(
    upstream: UpstreamOpt = None,
    anthropic_upstream: AnthropicOpt = None,
    host: HostOpt = None,
    port: PortOpt = None,
    context_length: ContextOpt = None,
    model_context: ModelContextOpt = None,
    config: ConfigOpt = None,
    store: StoreUrlOpt = None,
    api_key_env: ApiKeyEnvOpt = None,
    anthropic_api_key_env: AnthropicKeyEnvOpt = None,
    log_level: LogLevelOpt = "info",
    http: HttpOpt = None,
    background: BackgroundOpt = None,
) -> None:
    """Run the gateway that compacts each session's history.

    It speaks OpenAI Chat Completions and Responses, and Anthropic Messages."""
    create_app = _gateway_extra()
    from ..store import open_store

    with user_errors():
        settings = load_settings(config)
        section = settings.gateway
        host, port = host or section.host, port or section.port
        gateway = _settings(settings, upstream, anthropic_upstream, context_length,
                            model_context, api_key_env, anthropic_api_key_env)  # fmt: skip
        if background is not None:
            compression = replace(gateway.compression, background=background)
            gateway = replace(gateway, compression=compression)
        protocol = _checked(port, log_level, http or section.http)
        url = store or settings.store.url
        opened = open_store(url) if url else None
    if host not in LOOPBACK and not gateway.api_keys:
        typer.echo(
            f"warning: listening on {host} without gateway keys: anyone who can reach it may "
            "use it (set gateway.api_keys or WINDOWKEEPER_GATEWAY_KEYS)",
            err=True,
        )
    try:
        from ..gateway.collector import Collector

        app = create_app(gateway, store=opened)
        app.gateway.collector = Collector()  # this process is the gateway's alone
        _run(app, host, port, log_level, protocol)
    finally:
        if opened is not None:
            opened.close()


def _gateway_extra() -> Callable[..., GatewayApp]:
    """The gateway's ``create_app``, checked for first: the gateway extra may be missing."""
    try:
        import uvicorn  # noqa: F401

        from ..gateway import create_app
    except ImportError as exc:
        raise fail(
            f"the gateway needs the gateway extra ({exc.name} is missing): "
            "pip install 'windowkeeper[gateway]'"
        ) from None
    return create_app


def _settings(
    settings: Settings,
    upstream: str | None,
    anthropic: str | None,
    context_length: int | None,
    model_context: list[str] | None,
    api_key_env: str | None,
    anthropic_api_key_env: str | None,
) -> GatewaySettings:
    """The gateway's settings: command-line values over the config's ``gateway`` section."""
    from ..gateway.settings import gateway_settings, parse_model_context

    section = settings.gateway
    upstream = upstream or section.upstream
    anthropic = anthropic or section.anthropic_upstream
    if not upstream and not anthropic:
        raise ConfigError(
            "no upstream: pass --upstream URL (OpenAI-style) and/or --anthropic-upstream "
            "URL, or set gateway.upstream / gateway.anthropic_upstream"
        )
    lengths = {**section.model_context_lengths, **parse_model_context(model_context or [])}
    return gateway_settings(
        upstream, settings, context_length=context_length, model_context_lengths=lengths,
        api_key=_api_key(api_key_env or section.upstream_api_key_env),
        anthropic_upstream=anthropic,
        anthropic_api_key=_api_key(anthropic_api_key_env or section.anthropic_api_key_env),
    )  # fmt: skip


def _checked(port: int, log_level: str, http: str) -> Any:
    """Refuse a bad ``--port`` or ``--log-level``; the uvicorn ``http`` setting for ``--http``."""
    if not 0 < port < 65_536:
        raise ConfigError(f"--port must be between 1 and 65535, got {port}")
    if log_level not in LOG_LEVELS:
        raise ConfigError(f"--log-level must be one of {', '.join(LOG_LEVELS)}")
    return _http_protocol(http)


def _http_protocol(name: str) -> Any:
    """The uvicorn ``http`` setting for ``--http``."""
    if name not in HTTP_IMPLEMENTATIONS:
        raise ConfigError(f"--http must be one of {', '.join(HTTP_IMPLEMENTATIONS)}, got {name!r}")
    if name == "httptools" and importlib.util.find_spec("httptools") is None:
        raise ConfigError("--http httptools needs the httptools package: pip install "
                          "'windowkeeper[gateway]' (or use --http h11)")  # fmt: skip
    return name


def _run(app: Any, host: str, port: int, log_level: str, http: Any) -> None:
    """uvicorn until a signal; SIGTERM leaves through SystemExit so the caller can close
    the store (uvicorn shuts down gracefully, then re-raises the signal it caught)."""
    import uvicorn

    from ..gateway.settings import KEEP_ALIVE_SECONDS

    main = threading.current_thread() is threading.main_thread()  # only it may set handlers
    previous = signal.signal(signal.SIGTERM, _exit_quietly) if main else None
    try:
        uvicorn.run(
            app, host=host, port=port, log_level=log_level, log_config=log_config(log_level),
            timeout_graceful_shutdown=SHUTDOWN_GRACE_SECONDS, http=http,
            timeout_keep_alive=KEEP_ALIVE_SECONDS,
        )  # fmt: skip
    finally:
        if main:
            signal.signal(signal.SIGTERM, previous)


def log_config(log_level: str) -> dict[str, Any]:
    """uvicorn's logging, plus windowkeeper's loggers (one line per compaction at INFO)."""
    from uvicorn.config import LOGGING_CONFIG

    level = "DEBUG" if log_level == "trace" else log_level.upper()
    config = copy.deepcopy(LOGGING_CONFIG)
    config["formatters"]["windowkeeper"] = {
        "()": "uvicorn.logging.DefaultFormatter",
        "fmt": "%(levelprefix)s %(name)s: %(message)s",
    }
    config["handlers"]["windowkeeper"] = {
        "formatter": "windowkeeper", "class": "logging.StreamHandler", "stream": "ext://sys.stderr",
    }  # fmt: skip
    config["loggers"]["windowkeeper"] = {
        "handlers": ["windowkeeper"], "level": level, "propagate": False,
    }  # fmt: skip
    return config


def _exit_quietly(signum: int, frame: FrameType | None) -> None:
    raise SystemExit(0)


def _api_key(variable: str | None) -> str | None:
    if variable is None:
        return None
    value = os.environ.get(variable, "").strip()
    if not value:
        raise fail(f"--upstream-api-key-env names {variable}, which is unset or empty")
    return value
