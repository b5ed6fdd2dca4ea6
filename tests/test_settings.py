"""Settings: file discovery, env overrides, validation errors, provenance, `config show`."""

from __future__ import annotations

import dataclasses
import json
import os
from pathlib import Path
from typing import Any

import pytest
import typer
from typer.testing import CliRunner

from windowkeeper.cli.config import config_app
from windowkeeper.core.config import CompressionConfig
from windowkeeper.core.errors import ConfigError
from windowkeeper.core.settings import (
    CompressionSettings,
    Settings,
    find_config_file,
    load_settings,
)

runner = CliRunner()


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


@pytest.fixture
def home(tmp_path: Path) -> dict[str, str]:
    """An environment with an empty home and no WINDOWKEEPER_* variables."""
    (tmp_path / "home").mkdir()
    return {"HOME": str(tmp_path / "home")}


@pytest.fixture
def cwd(tmp_path: Path) -> Path:
    work = tmp_path / "work"
    work.mkdir()
    return work


def test_defaults_match_the_compression_dataclass(home: dict[str, str], cwd: Path) -> None:
    settings = load_settings(env=home, cwd=cwd)
    assert settings.config_file is None
    assert settings.compression_config() == CompressionConfig()
    assert {entry.source for entry in settings.entries()} == {"default"}
    assert settings.context.engine == "compressor"
    assert settings.threshold_tokens() is None  # no context length: nothing is guessed


def test_every_dataclass_field_is_a_setting() -> None:
    names = {f.name for f in dataclasses.fields(CompressionConfig)}
    assert names <= set(CompressionSettings.model_fields)


SAMPLE = """\
context:
  engine: compressor
compression:
  threshold: 0.6
  target_ratio: 0.95
  protect_last_n: 12
  threshold_tokens_cap: 90000
  model_thresholds:
    claude: 0.7
    "openrouter:claude-sonnet": 0.8
auxiliary:
  compression:
    model: small-summarizer
    base_url: http://localhost:8080/v1
    timeout: 30
    api_key_env: SUMMARY_KEY
model:
  name: claude-sonnet-4
  context_length: 200000
  max_tokens: 8000
  provider: openrouter
store:
  url: sqlite:///tmp/wk.db
"""


def test_file_values_and_provenance(tmp_path: Path, home: dict[str, str], cwd: Path) -> None:
    path = write(tmp_path / "wk.yaml", SAMPLE)
    settings = load_settings(path, env=home, cwd=cwd)
    assert settings.config_file == path
    assert settings.compression.target_ratio == 0.80  # clamped, as the compressor would
    assert settings.auxiliary.compression.timeout == 30.0
    assert settings.source("compression.threshold") == str(path)
    assert settings.source("compression.model_thresholds") == str(path)
    assert settings.source("compression.enabled") == "default"
    config = settings.compression_config()
    assert config.protect_last_n == 12
    assert dict(config.model_thresholds) == {"claude": 0.7, "openrouter:claude-sonnet": 0.8}
    assert settings.effective_threshold() == 0.8  # provider-scoped, longest match
    # (200,000 - 8,000) x 0.8 = 153,600, capped at 90,000.
    assert settings.threshold_tokens() == 90_000


def test_env_overrides_file(tmp_path: Path, home: dict[str, str], cwd: Path) -> None:
    path = write(tmp_path / "wk.yaml", SAMPLE)
    env = {
        **home,
        "WINDOWKEEPER_COMPRESSION__THRESHOLD": "0.55",
        "WINDOWKEEPER_COMPRESSION__ENABLED": "false",
        "WINDOWKEEPER_COMPRESSION__MODEL_THRESHOLDS": '{"gpt-4o": 0.9}',
        "WINDOWKEEPER_AUXILIARY__COMPRESSION__MODEL": "on",
        "WINDOWKEEPER_MODEL__PROVIDER": "",
        "WINDOWKEEPER_SUMMARY_API_KEY": "not-an-override",
    }
    settings = load_settings(path, env=env, cwd=cwd)
    assert settings.compression.threshold == 0.55
    assert settings.compression.enabled is False
    assert settings.compression.model_thresholds == {"gpt-4o": 0.9}  # the map is replaced
    assert settings.auxiliary.compression.model == "on"  # strings stay verbatim
    assert settings.model.provider is None
    assert settings.source("compression.threshold") == "WINDOWKEEPER_COMPRESSION__THRESHOLD"
    assert settings.source("auxiliary.compression.model") == (
        "WINDOWKEEPER_AUXILIARY__COMPRESSION__MODEL"
    )
    assert settings.source("compression.protect_last_n") == str(path)


def test_search_order(tmp_path: Path, home: dict[str, str], cwd: Path) -> None:
    home_file = write(Path(home["HOME"]) / ".config" / "windowkeeper" / "config.yaml", "{}\n")
    assert find_config_file(env=home, cwd=cwd) == home_file
    xdg_file = write(tmp_path / "xdg" / "windowkeeper" / "config.yaml", "{}\n")
    xdg_env = {**home, "XDG_CONFIG_HOME": str(tmp_path / "xdg")}
    assert find_config_file(env=xdg_env, cwd=cwd) == xdg_file
    local = write(cwd / "windowkeeper.yaml", "{}\n")
    assert find_config_file(env=xdg_env, cwd=cwd) == local
    named = write(tmp_path / "named.yaml", "{}\n")
    named_env = {**xdg_env, "WINDOWKEEPER_CONFIG": str(named)}
    assert find_config_file(env=named_env, cwd=cwd) == named
    explicit = write(tmp_path / "explicit.yaml", "{}\n")
    assert find_config_file(explicit, env=named_env, cwd=cwd) == explicit


def test_named_file_must_exist(tmp_path: Path, home: dict[str, str], cwd: Path) -> None:
    with pytest.raises(ConfigError, match=r"not found: .*missing\.yaml \(named by --config\)"):
        load_settings(tmp_path / "missing.yaml", env=home, cwd=cwd)
    env = {**home, "WINDOWKEEPER_CONFIG": str(tmp_path / "gone.yaml")}
    with pytest.raises(ConfigError, match="named by WINDOWKEEPER_CONFIG"):
        load_settings(env=env, cwd=cwd)


@pytest.mark.parametrize(
    ("text", "fragments"),
    [
        ("compression:\n  threshold: 1.5\n", ["compression.threshold", "1.5"]),
        ("compression:\n  threshhold: 0.5\n", ["compression.threshhold", "unknown setting"]),
        ("model:\n  context_length: lots\n", ["model.context_length", "'lots'"]),
        ("compression:\n  model_thresholds:\n    gpt: 2\n", ["model_thresholds.gpt", "2"]),
        ("store:\n  url: mysql://x\n", ["store.url", "sqlite://", "'mysql://x'"]),
        ("gatewey:\n  port: 1\n", ["gatewey", "unknown setting"]),
        ("gateway:\n  port: 0\n", ["gateway.port", "0"]),
        ("compression: 5\n", ["compression", "5"]),
    ],
)
def test_invalid_file_values_name_key_file_and_value(
    tmp_path: Path, home: dict[str, str], cwd: Path, text: str, fragments: list[str]
) -> None:
    path = write(tmp_path / "bad.yaml", text)
    with pytest.raises(ConfigError) as info:
        load_settings(path, env=home, cwd=cwd)
    message = str(info.value)
    assert str(path) in message
    for fragment in fragments:
        assert fragment in message


def test_invalid_env_values(home: dict[str, str], cwd: Path) -> None:
    env = {**home, "WINDOWKEEPER_COMPRESSION__MAX_ATTEMPTS": "zero"}
    with pytest.raises(ConfigError, match=r"max_attempts.*'zero'.*WINDOWKEEPER_COMPRESSION__MAX"):
        load_settings(env=env, cwd=cwd)
    typo = {**home, "WINDOWKEEPER_COMPRESION__THRESHOLD": "0.5"}
    with pytest.raises(ConfigError, match=r"no setting compresion\.threshold"):
        load_settings(env=typo, cwd=cwd)
    section = {**home, "WINDOWKEEPER_COMPRESSION": "x", "WINDOWKEEPER_MODEL__X__Y": "1"}
    with pytest.raises(ConfigError, match="WINDOWKEEPER_MODEL__X__Y"):
        load_settings(env=section, cwd=cwd)


@pytest.mark.parametrize(
    ("text", "match"),
    [
        ("compression: [1, 2\n", r"invalid YAML at line \d"),
        ("- just\n- a list\n", "expected a mapping of sections"),
    ],
)
def test_unreadable_files(
    tmp_path: Path, home: dict[str, str], cwd: Path, text: str, match: str
) -> None:
    path = write(tmp_path / "broken.yaml", text)
    with pytest.raises(ConfigError, match=match):
        load_settings(path, env=home, cwd=cwd)


def test_empty_file_means_defaults(tmp_path: Path, home: dict[str, str], cwd: Path) -> None:
    settings = load_settings(write(tmp_path / "empty.yaml", ""), env=home, cwd=cwd)
    assert settings.compression_config() == CompressionConfig()


def test_env_into_a_non_mapping_section(tmp_path: Path, home: dict[str, str], cwd: Path) -> None:
    path = write(tmp_path / "odd.yaml", "model: gpt\n")
    env = {**home, "WINDOWKEEPER_MODEL__NAME": "gpt-4o"}
    with pytest.raises(ConfigError, match=r"model in .*odd\.yaml must be a mapping"):
        load_settings(path, env=env, cwd=cwd)


def test_settings_constructed_directly() -> None:
    assert Settings().source("compression.threshold") == "default"
    assert Settings().compression_config() == CompressionConfig()


# --- `config show` ----------------------------------------------------------------------


def _cli() -> typer.Typer:
    app = typer.Typer()
    app.add_typer(config_app, name="config")  # as the main CLI mounts it
    return app


@pytest.fixture
def clean_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    for name in list(os.environ):
        if name.startswith("WINDOWKEEPER_") or name == "XDG_CONFIG_HOME":
            monkeypatch.delenv(name)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.chdir(tmp_path)
    return tmp_path


def test_show_table(clean_env: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = write(clean_env / "wk.yaml", SAMPLE)
    monkeypatch.setenv("WINDOWKEEPER_COMPRESSION__PROTECT_FIRST_N", "5")
    monkeypatch.setenv("COLUMNS", "200")  # rich folds long cells on a narrow terminal
    result = runner.invoke(_cli(), ["config", "show", "--config", str(path)])
    assert result.exit_code == 0, result.stderr
    assert f"config file: {path}" in result.stdout
    lines = result.stdout.splitlines()
    row = next(line for line in lines if "compression.protect_first_n" in line)
    assert "5" in row and "WINDOWKEEPER_COMPRESSION__PROTECT_FIRST_N" in row
    row = next(line for line in lines if "compression.threshold " in line)
    assert "0.6" in row and "file" in row
    assert any("threshold tokens" in line and "90,000" in line for line in lines)


def test_show_json(clean_env: Path) -> None:
    write(clean_env / "windowkeeper.yaml", "compression:\n  threshold: 0.7\n")
    result = runner.invoke(_cli(), ["config", "show", "--json"])
    assert result.exit_code == 0, result.stderr
    data: dict[str, Any] = json.loads(result.stdout)
    local = str(clean_env / "windowkeeper.yaml")
    assert data["config_file"] == local
    assert data["values"]["compression"]["threshold"] == 0.7
    assert data["sources"]["compression.threshold"] == local
    assert data["sources"]["model.name"] == "default"
    assert data["derived"] == {"effective_threshold": 0.7, "threshold_tokens": None}


def test_show_error_is_one_line_exit_2(clean_env: Path) -> None:
    path = write(clean_env / "bad.yaml", "compression:\n  threshold: nope\n")
    result = runner.invoke(_cli(), ["config", "show", "--config", str(path)])
    assert result.exit_code == 2
    assert result.stdout == ""
    assert result.stderr.count("\n") == 1
    assert result.stderr.startswith("error: invalid configuration: compression.threshold")
