"""The one message for an integration whose framework is not installed."""

from __future__ import annotations


def missing(extra: str, exc: ImportError) -> ImportError:
    """An :class:`ImportError` that says which extra brings the framework."""
    return ImportError(
        f"this windowkeeper integration needs the {extra!r} extra "
        f"(pip install 'windowkeeper[{extra}]'): {exc}"
    )
