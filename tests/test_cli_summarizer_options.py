"""``summarizer_options``: the ``--summarizer``/``--summary-*`` options written once and
gathered into the command's ``SummarizerChoice``, listed where its ``choice`` parameter
stands (the commands' ``--help`` is unchanged: tests/test_cli*.py)."""

from __future__ import annotations

import inspect

import typer
from typer.testing import CliRunner

from windowkeeper.cli.app import compress
from windowkeeper.cli.eval import eval_command
from windowkeeper.cli.replay import replay_command
from windowkeeper.cli.summarizer import (
    COMMON,
    DEFAULT_CHOICE,
    SummarizerChoice,
    summarizer_options,
)


def _app(count: int, seen: list[SummarizerChoice]) -> typer.Typer:
    app = typer.Typer(add_completion=False, rich_markup_mode=None)

    @app.command()
    @summarizer_options(count)
    def run(first: int = 1, choice: SummarizerChoice = DEFAULT_CHOICE, last: str = "z") -> None:
        seen.append(choice)
        typer.echo(f"{first} {last}")

    return app


def test_the_options_given_reach_the_command_as_its_choice() -> None:
    seen: list[SummarizerChoice] = []
    args = ["--first", "3", "--summarizer", "llm", "--summary-model", "m",
            "--summary-timeout", "7.5", "--summary-backend", "litellm",
            "--allow-small-summary-model", "--last", "q"]  # fmt: skip
    result = CliRunner().invoke(_app(10, seen), args)
    assert result.exit_code == 0, result.output
    assert result.output == "3 q\n"
    assert seen == [SummarizerChoice("llm", "m", timeout=7.5, backend="litellm", allow_small=True)]


def test_no_option_given_is_the_default_choice() -> None:
    seen: list[SummarizerChoice] = []
    assert CliRunner().invoke(_app(COMMON, seen), []).exit_code == 0
    assert seen == [SummarizerChoice()]


def test_the_options_stand_where_the_choice_was_and_only_the_first_count() -> None:
    names = list(inspect.signature(_app_command(COMMON)).parameters)
    assert names == ["first", "summarizer", "summary_model", "summary_base_url",
                     "summary_api_key", "summary_timeout", "summary_context_length",
                     "last"]  # fmt: skip
    result = CliRunner().invoke(_app(COMMON, []), ["--summary-stream"])
    assert result.exit_code != 0  # compress's own options are not given to the others


def _app_command(count: int) -> object:
    def run(first: int = 1, choice: SummarizerChoice = DEFAULT_CHOICE, last: str = "") -> None:
        del first, choice, last

    return summarizer_options(count)(run)


def test_the_commands_take_the_options_not_a_choice() -> None:
    for command, count in ((compress, 10), (replay_command, COMMON), (eval_command, COMMON)):
        parameters = inspect.signature(command).parameters
        assert "choice" not in parameters
        options = [name for name in parameters if name.startswith(("summar", "allow_small"))]
        assert len(options) == count, command
