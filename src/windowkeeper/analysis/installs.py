"""Missing dependencies and the commands that install them.

A run that failed because a module, package or program is missing is fixed once the agent
installs it: ``ModuleNotFoundError: No module named 'pytz'`` then ``pip install pytz``.
Names are compared loosely (case, ``-`` / ``_``, a package named after the module with a
prefix or suffix such as ``pyyaml`` for ``yaml``); an install of everything a project
declares (``pip install -r requirements.txt``, ``pip install -e .``, ``npm install``,
``mix deps.get``) fixes any missing dependency.
"""

from __future__ import annotations

import re

from ..core.hint_scan import literal_scanner
from ..core.secret_hints import has_folded_letters

_MISSING = re.compile(
    r"No module named ['\"]?([\w.]+)"
    r"|Cannot find module ['\"]([@\w./-]+)['\"]"
    r"|(?:^|\s)([\w.+-]+): (?:command )?not found"
    r"|command not found: ([\w.+-]+)"
    r"|(?:could not find|unknown|missing) (?:package|dependency|module) ['\"`]?([\w.@/-]+)"
    r"|Package ['\"]?([\w.-]+)['\"]? (?:was )?not found"
    r"|requires ([\w-]+) as a (?:test )?dependency"
    r"|cannot load such file -- ([\w/.-]+)",
    re.IGNORECASE | re.MULTILINE,
)
# Installers: the program and the subcommand that installs (``None``: the program alone).
_INSTALLERS = {
    "pip": "install", "pip3": "install", "uv": "add", "poetry": "add", "pipenv": "install",
    "conda": "install", "mamba": "install", "apt": "install", "apt-get": "install",
    "brew": "install", "npm": "install", "yarn": "add", "pnpm": "add", "bun": "add",
    "gem": "install", "cargo": "add", "go": "get", "composer": "require", "apk": "add",
    "dnf": "install", "yum": "install", "easy_install": None,
}  # fmt: skip
# Installing a project's declared dependencies (no names): fixes any missing one.
_WHOLE = re.compile(
    r"^(?:npm (?:install|i|ci)|yarn(?: install)?|pnpm install|bun install|mix deps\.get"
    r"|bundle(?: install)?|poetry install|pipenv install|uv sync|composer install"
    r"|go mod (?:download|tidy)|cargo fetch)$"
)
_SCAN = 3_000
# Every match of _MISSING lies on one line (its leading ``\s`` aside, which changes no
# name) and holds one of these there (in any case): only the lines of an output that
# hold one are searched. They are found in one Hyperscan pass, ASCII caseless, which is
# what IGNORECASE matches wherever no character of FOLDED_TO_ASCII occurs (core/hint_scan).
_MISSING_WORDS = (
    "no module named", "cannot find module", "not found", "could not find", "unknown",
    "missing", "requires", "cannot load such file",
)  # fmt: skip
_MISSING_SCAN = literal_scanner(_MISSING_WORDS)


def missing_names(text: str, *, lower: bool = True) -> tuple[str, ...]:
    """The modules, packages or programs an output says are missing (lower case, for
    matching; ``lower=False``: as written, for saying what to install)."""
    found: list[str] = []
    for part in (text[:_SCAN], text[-_SCAN:] if len(text) > _SCAN else ""):
        for start, end in _candidate_lines(part):
            for match in _MISSING.finditer(part, start, end):
                name = next(g for g in match.groups() if g)
                name = name.split(".")[0].split("/")[0]
                found.append(name.lower() if lower else name)
    return tuple(dict.fromkeys(n for n in found if n and n.lower() not in {"the", "a", "it"}))


def _candidate_lines(part: str) -> list[tuple[int, int]]:
    """The (start, end) of each line of ``part`` that may hold a match of ``_MISSING``,
    in order (all of ``part`` on the pure-Python path)."""
    if not part:
        return []
    if _MISSING_SCAN is None or has_folded_letters(part):
        return [(0, len(part))]
    lines = set()
    for at in _MISSING_SCAN.starts(part):
        end = part.find("\n", at)
        lines.add((part.rfind("\n", 0, at) + 1, len(part) if end < 0 else end))
    return sorted(lines)


def installed(step: str) -> tuple[str, ...] | None:
    """What an install step installs: the names (lower case), ``()`` for everything a
    project declares, ``None`` when the step installs nothing."""
    words = step.split()
    if words[:2] in (["python", "-m"], ["python3", "-m"]) and len(words) > 2:
        words = words[2:]
    if words[:2] == ["uv", "pip"]:
        words = ["pip", *words[2:]]
    if _WHOLE.match(" ".join(words)):
        return ()
    if not words or words[0] not in _INSTALLERS:
        return None
    program, args = words[0], [w for w in words[1:] if not w.startswith("-")]
    verb = _INSTALLERS[program]
    if verb is not None and (not args or args[0] != verb):
        return None
    names = args[1:] if verb is not None else args
    flags = set(words)
    if not names or flags & {"-r", "--requirement", "-e", "--editable"}:
        return ()
    return tuple(_VERSION_SPEC.split(n, maxsplit=1)[0].lower() for n in names)


_VERSION_SPEC = re.compile(r"[=<>\[@!~;]")


def covers(names: tuple[str, ...], missing: str) -> bool:
    """Whether installing ``names`` (``()``: everything declared) installs ``missing``."""
    if not names:
        return True
    wanted = missing.replace("-", "_")
    return any(wanted in n.replace("-", "_") for n in names)
