"""Engine plugins from the ``windowkeeper.engines`` entry-point group (faked, not installed)."""

from __future__ import annotations

import logging
from importlib import metadata

import pytest

from plugin_engine import EchoEngine
from windowkeeper.engine.compressor import ContextCompressor
from windowkeeper.engine.plugins import ENTRY_POINT_GROUP, available_engines, load_engine


def fake_entry_points(monkeypatch: pytest.MonkeyPatch, **targets: str) -> None:
    points = metadata.EntryPoints(
        metadata.EntryPoint(name, value, ENTRY_POINT_GROUP) for name, value in targets.items()
    )

    def entry_points(**params: str) -> metadata.EntryPoints:
        return points.select(**params)

    monkeypatch.setattr(metadata, "entry_points", entry_points)


def test_named_plugin_is_loaded(monkeypatch: pytest.MonkeyPatch) -> None:
    fake_entry_points(monkeypatch, echo="plugin_engine:EchoEngine")
    engine = load_engine("echo", context_length=1_000)
    assert isinstance(engine, EchoEngine) and engine.context_length == 1_000
    assert list(available_engines()) == ["echo"]


def test_builtin_when_not_named(monkeypatch: pytest.MonkeyPatch) -> None:
    fake_entry_points(monkeypatch, echo="plugin_engine:EchoEngine")
    assert isinstance(load_engine(None, context_length=32_000), ContextCompressor)
    assert isinstance(load_engine("compressor", context_length=32_000), ContextCompressor)


@pytest.mark.parametrize(
    ("name", "target", "expected"),
    [
        ("missing", None, "is not installed"),
        ("broken", "plugin_engine:does_not_exist", "failed to load"),
        ("crashes", "plugin_engine:crashing_factory", "failed to load"),
        ("wrong", "plugin_engine:NotAnEngine", "is not a ContextEngine"),
    ],
)
def test_unknown_or_broken_plugin_falls_back_with_a_warning(
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
    name: str,
    target: str | None,
    expected: str,
) -> None:
    fake_entry_points(monkeypatch, **({name: target} if target else {}))
    with caplog.at_level(logging.WARNING, logger="windowkeeper.engine.plugins"):
        engine = load_engine(name, context_length=32_000, plugin_only_option=True)
    assert isinstance(engine, ContextCompressor) and engine.context_length == 32_000
    assert expected in caplog.text and name in caplog.text
