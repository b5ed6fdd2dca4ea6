"""Exact token counts from a tokenizer that is already on this machine (design §2).

The ``tokenizers`` extra installs ``tiktoken``. Its encodings are BPE files that tiktoken
downloads on first use and caches (``TIKTOKEN_CACHE_DIR``); windowkeeper never downloads
at run time, so a counter is returned only when the encoding loads from the local cache.
While loading, tiktoken's file fetcher is replaced by one that refuses URLs: a cache miss
becomes "no exact counter" instead of a network request.
"""

from __future__ import annotations

import importlib
import logging
import threading
from collections.abc import Callable
from types import ModuleType
from typing import Any

from .tokens import TextCounter

log = logging.getLogger("windowkeeper.core.exact_tokens")

DEFAULT_ENCODING = "o200k_base"
_LOCK = threading.Lock()


class _WouldDownload(Exception):
    """Raised instead of fetching an encoding over the network."""


def _tiktoken() -> ModuleType | None:
    try:
        return importlib.import_module("tiktoken")
    except ImportError:
        return None


def counter_for(encoding: Any) -> TextCounter:
    """A :data:`~windowkeeper.core.tokens.TextCounter` over a tiktoken ``Encoding``.

    Special-token text inside messages is counted as ordinary text (it is data here).
    """

    def count(text: str) -> int:
        return len(encoding.encode(text, disallowed_special=()))

    return count


def local_counter(model: str | None = None, encoding: str | None = None) -> TextCounter | None:
    """An exact counter for ``model`` (or ``encoding``), or ``None`` when tiktoken is not
    installed, the model is unknown to it, or its encoding is not cached locally."""
    tiktoken = _tiktoken()
    if tiktoken is None:
        return None
    load = importlib.import_module("tiktoken.load")
    name = encoding or _encoding_name(tiktoken, model)
    if name is None:
        return None
    original: Callable[[str], bytes] = getattr(load, "read_file")  # noqa: B009

    def refuse(blobpath: str) -> bytes:
        if blobpath.startswith(("http://", "https://")):
            raise _WouldDownload(blobpath)
        return original(blobpath)

    with _LOCK:
        setattr(load, "read_file", refuse)  # noqa: B010 - a module attribute, swapped back
        try:
            loaded = tiktoken.get_encoding(name)
        except _WouldDownload:
            log.info("encoding %s is not cached locally; using token estimates", name)
            return None
        finally:
            setattr(load, "read_file", original)  # noqa: B010
    return counter_for(loaded)


def _encoding_name(tiktoken: ModuleType, model: str | None) -> str | None:
    """The model's encoding; the default one without a model; ``None`` for a model that
    tiktoken does not know (its counts would not be exact)."""
    if not model:
        return DEFAULT_ENCODING
    try:
        return str(tiktoken.encoding_name_for_model(model))
    except KeyError:
        return None
