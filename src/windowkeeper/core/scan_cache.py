"""Compiled Hyperscan databases kept on disk, so a process starts without compiling them.

Why: every process that imports windowkeeper builds ~10 Hyperscan databases (the secret
hints, the gates in front of the extractors), ~120 ms of a ~750 ms import, and the CLI
pays it at every start. A database deserialized from its own serialization (Hyperscan's
``hs_serialize_database``) costs microseconds.

What must hold:
- A cached database is used only for exactly the expressions, flags and mode it was
  compiled from, by the same Hyperscan version: the file's name is a SHA-256 of all of
  them, so anything else misses and compiles.
- A file that does not load (truncated, altered: Hyperscan checks its own checksum and
  the platform it was compiled for) is compiled again and rewritten; a cache that cannot
  be read or written is only slower. Nothing here raises past :func:`database`.
- A file is written whole or not at all (a temporary file in the same directory, then
  ``os.replace``), so a process never reads another's half-written file.
- Nothing is fetched: the cache holds only what this machine compiled.
- The folder stays small: each version's patterns make new files, so a process that
  stores one removes all but the :data:`KEEP` newest (a file removed while in use is only
  compiled and stored again).

Where: ``$WINDOWKEEPER_CACHE_DIR``, else ``$XDG_CACHE_HOME/windowkeeper``, else
``~/.cache/windowkeeper``; a ``hyperscan`` folder in it. ``WINDOWKEEPER_SCAN_CACHE=0``
turns the cache off (every database compiled, nothing written).
"""

from __future__ import annotations

import hashlib
import os
import tempfile
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

CACHE_DIR_ENV = "WINDOWKEEPER_CACHE_DIR"
SCAN_CACHE_ENV = "WINDOWKEEPER_SCAN_CACHE"
KEEP = 64  # files; one version uses ~10 (~50 KB each)


def cache_dir(env: Mapping[str, str] | None = None) -> Path | None:
    """Where compiled databases are kept; ``None`` when the cache is turned off or there
    is no home to put it in (never a folder under the working directory)."""
    env = os.environ if env is None else env
    if env.get(SCAN_CACHE_ENV, "").strip().lower() in ("0", "false", "no", "off"):
        return None
    named = env.get(CACHE_DIR_ENV, "").strip()
    xdg = env.get("XDG_CACHE_HOME", "").strip()
    try:  # expanding "~" raises where there is no $HOME and no user entry
        if named:
            base = Path(named).expanduser()
        elif xdg and Path(xdg).is_absolute():  # a relative one is ignored (the XDG spec)
            base = Path(xdg) / "windowkeeper"
        else:
            base = Path.home() / ".cache" / "windowkeeper"
    except (RuntimeError, KeyError):
        return None
    return base / "hyperscan" if base.is_absolute() else None


def cache_key(version: str, mode: int, expressions: list[bytes], flags: list[int]) -> str:
    """The name of a database's file: everything its compiled form depends on."""
    digest = hashlib.sha256(f"{version}\0{mode}\0{len(expressions)}\0".encode())
    for expression, flag in zip(expressions, flags, strict=True):
        # lengths first, so no two lists of expressions hash the same bytes
        digest.update(f"{len(expression)}:{flag}:".encode())
        digest.update(expression)
    return digest.hexdigest()


def database(
    hyperscan: Any,
    expressions: list[bytes],
    flags: list[int],
    compile_database: Callable[[], Any],
    folder: Path | None = None,
) -> Any:
    """The database of ``expressions`` / ``flags`` in block mode: loaded from ``folder``
    (default :func:`cache_dir`) where a good copy is there, else ``compile_database()``
    and stored for the next process."""
    where = cache_dir() if folder is None else folder
    if where is None:
        return compile_database()
    mode = hyperscan.HS_MODE_BLOCK
    version = str(getattr(hyperscan, "__version__", ""))
    path = where / f"{cache_key(version, mode, expressions, flags)}.hsdb"
    loaded = _load(hyperscan, path, mode)
    if loaded is not None:
        return loaded
    compiled = compile_database()
    _store(hyperscan, path, compiled)
    return compiled


def _load(hyperscan: Any, path: Path, mode: int) -> Any:
    try:
        data = path.read_bytes()
    except OSError:  # absent (the usual miss) or unreadable: compile
        return None
    try:
        return hyperscan.loadb(data, mode)
    except hyperscan.error:  # altered, truncated, compiled for another platform
        return None


def _store(hyperscan: Any, path: Path, compiled: Any) -> None:
    try:
        data = hyperscan.dumpb(compiled)
        path.parent.mkdir(parents=True, exist_ok=True)
        handle, temporary = tempfile.mkstemp(dir=path.parent, prefix=".", suffix=".tmp")
        try:
            with os.fdopen(handle, "wb") as out:
                out.write(data)
            os.replace(temporary, path)
            _trim(path.parent)
        finally:
            if os.path.exists(temporary):  # not replaced: a failed write
                os.unlink(temporary)
    except (OSError, hyperscan.error):  # a read-only home, a full disk: only slower
        return


def _trim(folder: Path) -> None:
    """Remove all but the :data:`KEEP` most recently written databases."""
    stored = sorted(folder.glob("*.hsdb"), key=lambda file: file.stat().st_mtime_ns)
    for stale in stored[:-KEEP]:
        stale.unlink(missing_ok=True)
