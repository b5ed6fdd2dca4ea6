"""``windowkeeper config ...``: inspect the effective configuration (design §10).

Mounted by the main CLI with ``app.add_typer(config_app, name="config")``.

``config show --json`` prints one object::

    {"config_file": "/path/windowkeeper.yaml" | null,
     "values":  {"compression": {"threshold": 0.5, ...}, ...},     # nested, as in the file
     "sources": {"compression.threshold": "default", ...},           # dotted key -> origin
     "derived": {"effective_threshold": 0.5, "threshold_tokens": 64000 | null}}

A source is ``default``, the config file's path, or the environment variable's name (the
table shows ``file`` for the config file, whose path heads the output).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.table import Table

from ..core.errors import WindowkeeperError
from ..core.settings import Settings, load_settings

EXIT_INVALID = 2

config_app = typer.Typer(
    name="config",
    help="Inspect the effective configuration (file, environment, defaults).",
    no_args_is_help=True,
    add_completion=False,
    rich_markup_mode=None,
)


@config_app.callback()
def _config() -> None:
    """Inspect the effective configuration (file, environment, defaults)."""
    # A callback keeps `config` a command group even while it has a single command.


@config_app.command("show")
def show(
    config: Annotated[
        Path | None,
        typer.Option("--config", help="YAML config file (default: the usual search path)."),
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="One JSON object on stdout.")] = False,
) -> None:
    """Print every effective setting with the place its value came from."""
    try:
        settings = load_settings(config)
        derived = _derived(settings)
    except WindowkeeperError as exc:
        typer.echo(f"error: {' '.join(str(exc).split())}", err=True)
        raise typer.Exit(EXIT_INVALID) from None
    if as_json:
        typer.echo(json.dumps(_as_json(settings, derived), indent=2, ensure_ascii=False))
        return
    _render(settings, derived)


def _derived(settings: Settings) -> dict[str, Any]:
    return {
        "effective_threshold": settings.effective_threshold(),
        "threshold_tokens": settings.threshold_tokens(),
    }


def _as_json(settings: Settings, derived: dict[str, Any]) -> dict[str, Any]:
    return {
        "config_file": str(settings.config_file) if settings.config_file else None,
        "values": settings.model_dump(mode="json"),
        "sources": {entry.key: entry.source for entry in settings.entries()},
        "derived": derived,
    }


def _format(value: object) -> str:
    if value is None:
        return "-"
    if isinstance(value, dict | list | bool):
        return json.dumps(value, ensure_ascii=False)
    return str(value)


def _render(settings: Settings, derived: dict[str, Any]) -> None:
    console = Console(file=sys.stdout, highlight=False)
    console.print(f"config file: {settings.config_file or 'none (defaults and environment)'}")
    table = Table(show_edge=False, pad_edge=False)
    table.add_column("key", no_wrap=True)
    table.add_column("value", overflow="fold")
    table.add_column("source", overflow="fold")
    file_source = str(settings.config_file)
    for entry in settings.entries():
        # The file's path is in the header line; repeating it per row would drown the table.
        source = "file" if entry.source == file_source else entry.source
        style = "dim" if entry.source == "default" else None
        table.add_row(entry.key, _format(entry.value), source, style=style)
    table.add_row("effective threshold", _format(derived["effective_threshold"]), "derived")
    tokens = derived["threshold_tokens"]
    shown = f"{tokens:,}" if tokens is not None else "- (set model.context_length)"
    table.add_row("threshold tokens", shown, "derived")
    console.print(table)
