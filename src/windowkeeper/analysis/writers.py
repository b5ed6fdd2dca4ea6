"""Writers :mod:`.commands` does not know by their shell syntax alone.

- **Programs that rewrite the files they are given**: formatters and fixers run in place
  (``black``, ``ruff format``, ``prettier --write``, ``gofmt -w``, ``eslint --fix`` …),
  ``dd of=``, ``awk -i inplace``, ``sponge``. A checking run (``black --check``,
  ``prettier`` without ``--write``) writes nothing; a directory operand is left out
  (which of its files changed is not known).
- **Which operands a file utility writes**: ``cp`` / ``mv`` into a directory (``-t``,
  a trailing ``/``, several sources), ``sed -i`` / ``perl -pi`` past their script.
- **Runners in front of a program** (``sudo``, ``env X=1``, ``timeout 60``,
  ``python -m``, ``uv run``, ``npx`` …): the step is judged by the program they run.
- **Scripts** (inline or in a heredoc) that write a file: Python ``open(…, "w")``,
  ``Path(…).write_text``, ``shutil`` copies, a path set in a variable first; Node
  ``fs.writeFileSync`` and kin, ``Bun.write``, ``Deno.writeTextFile``; Ruby
  ``File.write`` / ``File.open(…, "w")``; Perl ``open($fh, ">", …)``.
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Sequence
from dataclasses import dataclass


@dataclass(frozen=True)
class _Fixer:
    """``by_default``: writes unless one of ``flags`` is given (``black --check``);
    otherwise writes only when one is (``prettier --write``)."""

    by_default: bool
    flags: frozenset[str]


def _fixer(by_default: bool, *flags: str) -> _Fixer:
    return _Fixer(by_default, frozenset(flags))


_IN_PLACE = ("-i", "--in-place")
# Keyed by program, or by "program subcommand" where the subcommand decides.
_FIXERS = {
    "black": _fixer(True, "--check", "--diff"),
    "isort": _fixer(True, "--check", "--check-only", "-c", "--diff"),
    "pyupgrade": _fixer(True),
    "rustfmt": _fixer(True, "--check"),
    "stylua": _fixer(True, "--check"),
    "autopep8": _fixer(False, *_IN_PLACE),
    "yapf": _fixer(False, *_IN_PLACE),
    "autoflake": _fixer(False, *_IN_PLACE),
    "docformatter": _fixer(False, *_IN_PLACE),
    "clang-format": _fixer(False, "-i"),
    "gofmt": _fixer(False, "-w"),
    "goimports": _fixer(False, "-w"),
    "shfmt": _fixer(False, "-w", "--write"),
    "prettier": _fixer(False, "-w", "--write"),
    "eslint": _fixer(False, "--fix"),
    "standardrb": _fixer(False, "--fix"),
    "rubocop": _fixer(False, "-a", "-A", "--autocorrect", "--autocorrect-all", "--auto-correct"),
    "ruff": _fixer(False, "--fix"),
    "ruff format": _fixer(True, "--check", "--diff"),
    "ruff check": _fixer(False, "--fix"),
    "biome format": _fixer(False, "--write"),
    "biome check": _fixer(False, "--write", "--apply", "--fix"),
    "biome lint": _fixer(False, "--write", "--apply", "--fix"),
}
PROGRAMS = tuple(sorted({*(name.split()[0] for name in _FIXERS), "dd", "awk", "gawk", "sponge"}))
"""Every program this module can say writes a file (for a cheap gate before tokenizing)."""

# A flag whose next word is its value, not a file to format (``--config ruff.toml``).
_VALUE_FLAG = re.compile(r"--?[\w-]*(?:config|settings|ignore|path|file|rc)[\w-]*")


def program_writes(head: str, args: Sequence[str]) -> list[str]:
    """The files a step running ``head`` with ``args`` rewrites (``[]`` if none known)."""
    if head == "dd":
        return [t[3:] for t in args if t.startswith("of=") and not t.startswith("of=/dev/")]
    if head in ("awk", "gawk"):
        return _awk_in_place(args)
    if head == "sponge":
        return [t for t in args if not t.startswith("-")]
    fixer = _FIXERS.get(f"{head} {args[0]}") if args else None
    if fixer is not None:
        args = args[1:]
    else:
        fixer = _FIXERS.get(head)
    flagged = any(_given(fixer.flags, t) for t in args) if fixer is not None else False
    if fixer is None or flagged == fixer.by_default:  # checking only, or never asked to write
        return []
    return [path for path in _files(args) if _has_suffix(path)]


def _given(flags: frozenset[str], token: str) -> bool:
    return token in flags or token.partition("=")[0] in flags


def _files(args: Sequence[str]) -> list[str]:
    files, skip = [], False
    for token in args:
        if skip:
            skip = False
        elif token.startswith("-"):
            skip = "=" not in token and _VALUE_FLAG.fullmatch(token) is not None
        else:
            files.append(token)
    return files


def _awk_in_place(args: Sequence[str]) -> list[str]:
    """The files of ``gawk -i inplace 'prog' a b``: the operands after the program (the
    first operand, unless ``-f`` gave it), the values of ``-v``/``-F``/``-f``/``-i``
    skipped."""
    operands: list[str] = []
    in_place = scripted = skip = False
    for index, token in enumerate(args):
        if skip:
            skip = False
        elif token in ("-i", "--include"):
            in_place |= index + 1 < len(args) and args[index + 1] == "inplace"
            skip = True
        elif token in ("-iinplace", "--include=inplace"):
            in_place = True
        elif token in ("-v", "-F", "-f"):
            scripted |= token == "-f"
            skip = True
        elif not token.startswith("-"):
            operands.append(token)
    if not in_place:
        return []
    return operands if scripted else operands[1:]


def _has_suffix(path: str) -> bool:
    name = path.rstrip("/").rsplit("/", 1)[-1]
    return "." in name.strip(".") and "*" not in name


# --- the core file utilities -------------------------------------------------------


def copied(args: Sequence[str], operands: list[str]) -> tuple[list[str], list[str]]:
    """(sources, files written) of ``cp`` / ``mv``: into a directory when ``-t`` names one,
    when the target ends in ``/`` or when there are several sources; else the target."""
    directory = next(
        (args[i + 1] for i, t in enumerate(args[:-1]) if t in ("-t", "--target-directory")),
        next((t.partition("=")[2] for t in args if t.startswith("--target-directory=")), None),
    )
    if directory is not None:
        sources = [path for path in operands if path != directory]
    else:
        *sources, directory = operands
        if len(sources) == 1 and not directory.endswith("/"):
            return sources, [directory]
    base = directory.rstrip("/") or "/"
    return sources, [posixpath.join(base, posixpath.basename(s.rstrip("/"))) for s in sources]


def in_place(token: str, program: str) -> bool:
    """Whether ``token`` is the in-place option of ``sed`` (``-i``, ``-i.bak``,
    ``--in-place``) or ``perl`` (``-i``, ``-pi``, ``-pi.bak``)."""
    if program == "sed":
        return token.startswith(("-i", "--in-place=")) or token == "--in-place"
    return token.startswith("-") and not token.startswith("--") and "i" in token


def in_place_files(args: Sequence[str]) -> list[str]:
    """The files of ``sed -i`` / ``perl -pi``: every operand after the script (the first
    operand, unless ``-e``/``-f`` gave it), the arguments of ``-e``/``-f`` skipped."""
    operands, scripted, skip = [], False, False
    for token in until_redirect(args):
        if skip or not token:
            skip = False
        elif token in ("-e", "-f", "--expression", "--file"):
            skip = scripted = True
        elif not token.startswith("-"):
            operands.append(token)
    return operands if scripted else operands[1:]


def until_redirect(tokens: Sequence[str]) -> list[str]:
    """``tokens`` up to the first redirect (``> out``, ``2>err``, ``&>log``)."""
    found = []
    for token in tokens:
        if token.startswith((">", "2>", "&>")):
            break
        found.append(token)
    return found


# --- runners ---------------------------------------------------------------------------

_PREFIXES = frozenset({"sudo", "doas", "command", "exec", "nice", "nohup", "time", "env",
                       "timeout", "stdbuf", "xvfb-run"})  # fmt: skip
_RUNNERS = {
    "python": "-m", "python3": "-m", "uv": "run", "poetry": "run", "pdm": "run",
    "hatch": "run", "pipx": "run", "pnpm": "exec", "bun": "x", "npm": "exec",
}  # fmt: skip
_BARE_RUNNERS = frozenset({"npx", "bunx", "uvx", "yarn"})
_PREFIX_VALUE = re.compile(r"\d+(?:\.\d+)?[smhd]?|[A-Za-z_]\w*=.*")
"""What a prefix takes before the program: a duration (``timeout 60``) or an assignment."""
_VALUED = {
    "sudo": frozenset({"-u", "-g", "-C", "-D", "-h", "-p", "-r", "-t", "-U", "-T"}),
    "doas": frozenset({"-u", "-C"}),
    "env": frozenset({"-u", "-C", "-S", "--unset", "--chdir"}),
    "timeout": frozenset({"-s", "-k", "--signal", "--kill-after"}),
    "nice": frozenset({"-n", "--adjustment"}),
}
"""Options of a prefix whose value is the next word (``sudo -u app``, ``timeout -s KILL``)."""


def unwrapped(words: Sequence[str]) -> Sequence[str]:
    """The words of the program a step runs, past runners in front of it (``sudo``,
    ``env X=1``, ``timeout 60``, ``python -m``, ``uv run``, ``npx -y`` …); the words as
    given when nothing is in front, or when a runner runs nothing (``env`` alone)."""
    if not words or _first_name(words[0]) not in _RUNNER_NAMES:
        return words  # the common case
    index = 0
    while index < len(words):
        head = words[index].rsplit("/", 1)[-1]
        if head in _PREFIXES:
            index += 1
            valued = _VALUED.get(head, frozenset())
            while index < len(words) and (
                words[index].startswith("-") or _PREFIX_VALUE.fullmatch(words[index])
            ):
                index += 2 if words[index] in valued else 1
        elif head in _BARE_RUNNERS or _RUNNERS.get(_versionless(head)) == _at(words, index + 1):
            index += 1 if head in _BARE_RUNNERS else 2
            while index < len(words) and words[index].startswith("-"):
                index += 1
        else:
            break
    return words[index:] if 0 < index < len(words) else words


_RUNNER_NAMES = _PREFIXES | _BARE_RUNNERS | set(_RUNNERS)


def _first_name(word: str) -> str:
    if word in _RUNNER_NAMES or ("/" not in word and not word.startswith("python3.")):
        return word  # one look-up for nearly every step
    return _versionless(word.rsplit("/", 1)[-1])


def _versionless(head: str) -> str:
    return "python3" if head.startswith("python3.") else head


def _at(words: Sequence[str], index: int) -> str | None:
    return words[index] if index < len(words) else None


# --- scripts ---------------------------------------------------------------------------

INTERPRETERS = ("python", "node", "ruby", "perl", "deno", "bun")
"""A command line naming none of these runs no inline script we read."""

# (the literals a script must hold one of, the pattern, its path group): one pattern per
# family, each run only over a script holding one of its literals (one alternation of
# them all is slower than all of them: no literal prefix for the engine to look for).
_LITERAL_WRITES = tuple(
    (hints, re.compile(pattern), group)
    for hints, pattern, group in (
        (("open(",), r"""open\(\s*(?:r|f)?(['"])([^'"\n]+)\1\s*,\s*(?:mode\s*=\s*)?(['"])"""
                  r"""[^'"\n]*[wax+][^'"\n]*\3""", 2),  # Python; Ruby's File.open too
        (("write_",), r"""Path\(\s*(['"])([^'"\n]+)\1\s*\)\s*\.\s*write_(?:text|bytes)\(""", 2),
        (("shutil.",),
         r"""shutil\.(?:copy2?|copyfile|move)\(\s*[^,\n]+,\s*(['"])([^'"\n]+)\1\s*\)""", 2),
        (("File",), r"""(?:write|append|output|writeText)File(?:Sync)?\(\s*(['"`])([^'"`$\n]+)\1""",
         2),  # Node, Deno
        (("Stream(",), r"""createWriteStream\(\s*(['"`])([^'"`$\n]+)\1""", 2),
        (("Bun.write",), r"""Bun\.write\(\s*(['"`])([^'"`$\n]+)\1""", 2),
        # Ruby; the pattern's two literals, not ".write(" (every Python ``f.write(``)
        (("File.write(", "IO.write("), r"""(?:File|IO)\.write\(\s*(['"])([^'"\n]+)\1""", 2),
        (("open",),
         r"""open\s*\(?\s*(?:my\s+)?\$\w+\s*,\s*(['"])\+?>>?\1\s*,\s*(['"])([^'"\n$]+)\2""",
         3),  # Perl
    )
)  # fmt: skip
SCRIPT_HINTS = tuple(hint for hints, _, _ in _LITERAL_WRITES for hint in hints)
"""A script that holds none of these writes no file the patterns below recognize."""
SCRIPT_GATE = ("open", "write_", "shutil.", "File", "Stream(", "Bun.write", "IO.write(")
"""What must hold: a text holds one of :data:`SCRIPT_HINTS` exactly when it holds one of
these (the hints that hold another hint are left out: ``open(`` holds ``open``,
``File.write(`` holds ``File``; ``tests/test_extraction_shortcuts.py``), so a text with
none is scanned seven times, not nine; ``open`` first, as most scripts that pass hold it."""
# The same with the path in a variable (``p = "src/a.py"`` ... ``open(p, "w")``); each
# match holds "open(" or "write_" (the variables are looked for only then).
_VARIABLE_WRITES = re.compile(
    r"""open\(\s*([A-Za-z_]\w*)\s*,\s*(?:mode\s*=\s*)?(['"])[^'"\n]*[wax+][^'"\n]*\2"""
    r"""|Path\(\s*([A-Za-z_]\w*)\s*\)\s*\.\s*write_(?:text|bytes)\("""
)
_ASSIGN = re.compile(r"""^[ \t]*([A-Za-z_]\w*)\s*=\s*(['"])([^'"\n]+)\2[ \t]*$""", re.M)


def script_writes(body: str) -> list[str]:
    """The files a script writes, in the order it names them."""
    if not any(word in body for word in SCRIPT_GATE):
        return []
    found = [
        (match.start(), match.group(group))
        for hints, pattern, group in _LITERAL_WRITES
        if any(hint in body for hint in hints)
        for match in pattern.finditer(body)
    ]
    if "open(" not in body and "write_" not in body:
        return [path for _, path in sorted(found)]
    variables = [(m.start(), m.group(1) or m.group(3)) for m in _VARIABLE_WRITES.finditer(body)]
    if variables:  # the literal each such variable was last set to, if any
        values = {m.group(1): m.group(3) for m in _ASSIGN.finditer(body)}
        found += [(at, values[name]) for at, name in variables if name in values]
    return [path for _, path in sorted(found)]
