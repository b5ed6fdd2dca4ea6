"""The ``demo`` command: the main job, offline, on the bundled synthetic session."""

from __future__ import annotations

import json
from typing import Annotated

import typer

from ..core.errors import ConfigError
from .common import stdout_console, user_errors
from .eval_view import demo_eval
from .render import render_inspection


def demo_command(
    as_json: Annotated[bool, typer.Option("--json", help="Machine-readable figures.")] = False,
    context_length: Annotated[
        int, typer.Option("--context-length", help="Window of the simulated model.")
    ] = 32_000,
) -> None:
    """Offline demo: inspect and compact a bundled synthetic coding-agent session."""
    from . import demo_view as demo_flow  # the demo data is only read when the demo runs

    with user_errors():
        if context_length <= 0:
            raise ConfigError(f"--context-length must be a positive integer, got {context_length}")
        outcome = demo_flow.run_demo(context_length=context_length)
    if as_json:
        typer.echo(json.dumps(outcome.to_dict(), indent=2))
        return
    console = stdout_console()
    demo_flow.render_intro(console, outcome)
    render_inspection(console, outcome.inspection)
    demo_flow.render_outcome(console, outcome)
    for line in demo_eval(outcome.messages, demo_flow.DEMO_TOOLS, context_length):
        console.print(line)
