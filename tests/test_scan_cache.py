"""Compiled Hyperscan databases kept on disk (core/scan_cache): a good copy is loaded, a
bad one compiled again, a cache that cannot be written only slower."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from windowkeeper.core import hint_scan, scan_cache

hyperscan: Any = pytest.importorskip("hyperscan")

EXPRESSIONS = [b"secret", b"tok[0-9]+", b"pass\\x77ord"]
FLAGS = [hyperscan.HS_FLAG_SOM_LEFTMOST] * 3


def _matches(database: Any, data: bytes) -> list[tuple[int, int, int]]:
    found: list[tuple[int, int, int]] = []

    def on(index: int, start: int, end: int, flags: int, context: Any) -> None:
        found.append((index, start, end))

    database.scan(data, on, 0, None, hyperscan.Scratch(database))
    return sorted(found)


def _compiler(calls: list[int]) -> Any:
    def compile_database() -> Any:
        calls.append(1)
        return hint_scan._compiled(EXPRESSIONS, FLAGS)

    return compile_database


def _files(folder: Path) -> list[Path]:
    return sorted(folder.glob("*.hsdb"))


TEXT = b"a secret, tok123 and password; tok9 secret"


def test_a_second_process_loads_what_the_first_compiled(tmp_path: Path) -> None:
    calls: list[int] = []
    first = scan_cache.database(hyperscan, EXPRESSIONS, FLAGS, _compiler(calls), tmp_path)
    assert calls == [1] and len(_files(tmp_path)) == 1
    second = scan_cache.database(hyperscan, EXPRESSIONS, FLAGS, _compiler(calls), tmp_path)
    assert calls == [1]  # loaded, not compiled
    assert second is not first
    assert _matches(second, TEXT) == _matches(first, TEXT) != []
    assert not list(tmp_path.glob(".*.tmp"))  # no temporary file left behind


@pytest.mark.parametrize("damage", ["truncate", "flip", "empty", "garbage"])
def test_a_damaged_file_is_compiled_again_and_rewritten(tmp_path: Path, damage: str) -> None:
    calls: list[int] = []
    good = scan_cache.database(hyperscan, EXPRESSIONS, FLAGS, _compiler(calls), tmp_path)
    (path,) = _files(tmp_path)
    data = bytearray(path.read_bytes())
    if damage == "truncate":
        data = data[: len(data) // 2]
    elif damage == "flip":
        data[len(data) // 2] ^= 0xFF
    elif damage == "empty":
        data = bytearray()
    else:
        data = bytearray(b"not a database" * 50)
    path.write_bytes(bytes(data))
    again = scan_cache.database(hyperscan, EXPRESSIONS, FLAGS, _compiler(calls), tmp_path)
    assert calls == [1, 1]
    assert _matches(again, TEXT) == _matches(good, TEXT)
    assert hyperscan.loadb(path.read_bytes(), hyperscan.HS_MODE_BLOCK) is not None


def test_a_cache_that_cannot_be_written_only_compiles(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("a file where the cache folder would be")
    calls: list[int] = []
    found = scan_cache.database(hyperscan, EXPRESSIONS, FLAGS, _compiler(calls), blocker / "x")
    found = scan_cache.database(hyperscan, EXPRESSIONS, FLAGS, _compiler(calls), blocker / "x")
    assert calls == [1, 1]
    assert _matches(found, TEXT) != []


def test_the_folder_keeps_the_newest_files(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(scan_cache, "KEEP", 3)
    version, block = hyperscan.__version__, hyperscan.HS_MODE_BLOCK
    names = [scan_cache.cache_key(version, block, [f"w{n}".encode()], [0]) for n in range(5)]
    for number in range(5):
        expressions = [f"w{number}".encode()]
        compile_database = lambda e=expressions: hint_scan._compiled(e, [0])  # noqa: E731
        scan_cache.database(hyperscan, expressions, [0], compile_database, tmp_path)
        # written in this order, whatever the file system's timestamp granularity
        at = (number + 1) * 10**9
        os.utime(tmp_path / f"{names[number]}.hsdb", ns=(at, at))
        kept = {file.stem for file in _files(tmp_path)}
        assert kept == set(names[max(0, number - 2) : number + 1])


def test_turned_off_compiles_and_writes_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(scan_cache.CACHE_DIR_ENV, str(tmp_path))
    monkeypatch.setenv(scan_cache.SCAN_CACHE_ENV, "0")
    calls: list[int] = []
    scan_cache.database(hyperscan, EXPRESSIONS, FLAGS, _compiler(calls))
    scan_cache.database(hyperscan, EXPRESSIONS, FLAGS, _compiler(calls))
    assert calls == [1, 1]
    assert not list(tmp_path.rglob("*"))


def test_the_folder_follows_the_environment(tmp_path: Path) -> None:
    named = {scan_cache.CACHE_DIR_ENV: str(tmp_path / "mine")}
    assert scan_cache.cache_dir(named) == tmp_path / "mine" / "hyperscan"
    xdg = {"XDG_CACHE_HOME": str(tmp_path / "xdg")}
    assert scan_cache.cache_dir(xdg) == tmp_path / "xdg" / "windowkeeper" / "hyperscan"
    assert scan_cache.cache_dir({}) == Path.home() / ".cache" / "windowkeeper" / "hyperscan"
    relative = {"XDG_CACHE_HOME": "relative"}  # ignored, as the XDG spec says
    assert scan_cache.cache_dir(relative) == Path.home() / ".cache" / "windowkeeper" / "hyperscan"
    for off in ("0", "false", "OFF", "no"):
        assert scan_cache.cache_dir({**named, scan_cache.SCAN_CACHE_ENV: off}) is None
    assert scan_cache.cache_dir({**named, scan_cache.SCAN_CACHE_ENV: "1"}) is not None


def test_no_home_means_no_cache(monkeypatch: pytest.MonkeyPatch) -> None:
    def homeless() -> Path:
        raise RuntimeError("Could not determine home directory.")

    def unexpandable(self: Path) -> Path:
        raise RuntimeError("Could not determine home directory.")

    monkeypatch.setattr(Path, "home", staticmethod(homeless))
    monkeypatch.setattr(Path, "expanduser", unexpandable)
    assert scan_cache.cache_dir({}) is None
    assert scan_cache.cache_dir({"XDG_CACHE_HOME": "relative/dir"}) is None  # ignored
    assert scan_cache.cache_dir({"XDG_CACHE_HOME": "/abs"}) == Path("/abs/windowkeeper/hyperscan")
    assert scan_cache.cache_dir({scan_cache.CACHE_DIR_ENV: "~/mine"}) is None
    assert scan_cache.cache_dir({scan_cache.CACHE_DIR_ENV: "mine"}) is None  # relative


def test_the_key_changes_with_anything_the_database_depends_on() -> None:
    key = scan_cache.cache_key("1", 1, [b"ab", b"c"], [0, 0])
    assert key != scan_cache.cache_key("1", 1, [b"a", b"bc"], [0, 0])  # same bytes joined
    assert key != scan_cache.cache_key("1", 1, [b"ab", b"c"], [0, 1])
    assert key != scan_cache.cache_key("2", 1, [b"ab", b"c"], [0, 0])
    assert key != scan_cache.cache_key("1", 2, [b"ab", b"c"], [0, 0])
    assert key != scan_cache.cache_key("1", 1, [b"c", b"ab"], [0, 0])  # ids are positions
    assert key == scan_cache.cache_key("1", 1, [b"ab", b"c"], [0, 0])


def test_scanners_built_from_the_cache_find_what_compiled_ones_do(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(scan_cache.CACHE_DIR_ENV, str(tmp_path))
    monkeypatch.delenv(scan_cache.SCAN_CACHE_ENV, raising=False)
    text = "Authorization: Bearer x; password=1; api_key and TOKEN here"
    built = hint_scan.HintScanner(["Bearer", "api_key"], ["password", "token"])
    assert len(_files(tmp_path / "hyperscan")) == 1
    loaded = hint_scan.HintScanner(["Bearer", "api_key"], ["password", "token"])
    first, second = built.scan(text), loaded.scan(text)
    assert (first._exact, first.lowered) == (second._exact, second.lowered)
    low = text.lower()
    assert first.lowered == {"password": [low.find("password")], "token": [low.find("token")]}
    assert first._exact == {"Bearer": [text.find("Bearer")], "api_key": [text.find("api_key")]}


def test_the_cli_starts_without_pillow() -> None:
    """Pillow (~70 ms of an import) is loaded by ``eval --plot`` only."""
    code = "import sys, windowkeeper.cli.app; print(any(m.startswith('PIL') for m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"
