"""Engine plugins: discovery through the entry-point group ``windowkeeper.engines``.

A plugin package registers a :class:`~windowkeeper.engine.base.ContextEngine` subclass (or a
factory returning an instance) in its metadata::

    [project.entry-points."windowkeeper.engines"]
    lcm = "my_package.engine:LcmEngine"

A plugin is used only when named (``context.engine: lcm`` / ``load_engine("lcm", ...)``).
An unknown or broken plugin logs a warning and the built-in
:class:`~windowkeeper.engine.compressor.ContextCompressor` is used instead, so a bad install never
stops an agent from starting.
"""

from __future__ import annotations

import inspect
import logging
from importlib import metadata
from typing import Any

from .base import ContextEngine
from .compressor import ContextCompressor

log = logging.getLogger("windowkeeper.engine.plugins")

ENTRY_POINT_GROUP = "windowkeeper.engines"
BUILTIN_NAMES = frozenset({"", "compressor", "builtin", "default"})


def available_engines() -> dict[str, metadata.EntryPoint]:
    """Installed engine plugins by name (the built-in one is not listed)."""
    return {ep.name: ep for ep in metadata.entry_points(group=ENTRY_POINT_GROUP)}


def load_engine(name: str | None = None, **kwargs: Any) -> ContextEngine:
    """The engine called ``name``, built with ``kwargs``; the built-in one when ``name`` is
    empty, ``"compressor"``, unknown or broken (with a warning for the last two)."""
    if name is None or name.strip().lower() in BUILTIN_NAMES:
        return _builtin(kwargs)
    entry = available_engines().get(name)
    if entry is None:
        known = ", ".join(sorted(available_engines())) or "none installed"
        log.warning(
            "context engine %r is not installed (plugins: %s); using the built-in compressor",
            name,
            known,
        )
        return _builtin(kwargs)
    engine = _instantiate(name, entry, kwargs)
    return engine if engine is not None else _builtin(kwargs)


def _instantiate(
    name: str, entry: metadata.EntryPoint, kwargs: dict[str, Any]
) -> ContextEngine | None:
    try:
        target = entry.load()
        engine = target(**kwargs) if callable(target) else target
    # Loading and constructing a plugin runs third-party code; whatever it raises, the
    # agent must still start: log the traceback, warn, and fall back to the built-in.
    except Exception:
        log.warning(
            "context engine %r failed to load; using the built-in compressor", name, exc_info=True
        )
        return None
    if not isinstance(engine, ContextEngine):
        log.warning(
            "context engine %r (%s) is not a ContextEngine (got %s); using the built-in compressor",
            name,
            entry.value,
            type(engine).__name__,
        )
        return None
    return engine


def _builtin(kwargs: dict[str, Any]) -> ContextEngine:
    """The built-in compressor, given only the arguments it accepts.

    Plugin-specific options must not stop the fallback from starting; those it cannot use
    are named in a log line.
    """
    accepted = inspect.signature(ContextCompressor).parameters
    usable = {k: v for k, v in kwargs.items() if k in accepted}
    ignored = sorted(set(kwargs) - set(usable))
    if ignored:
        log.info("built-in compressor ignores plugin options: %s", ", ".join(ignored))
    return ContextCompressor(**usable)
