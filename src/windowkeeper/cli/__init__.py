"""Edge: the ``windowkeeper`` command line (typer); :func:`main` is the entry point."""

from .app import main

__all__ = ["main"]
