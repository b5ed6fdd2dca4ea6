"""Writers known by their program, runners in front of a program, and script writes."""

from __future__ import annotations

import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from windowkeeper.analysis.commands import command_touches, is_read_only, program_of
from windowkeeper.analysis.steps import DELETED, MODIFIED
from windowkeeper.analysis.writers import script_writes, unwrapped
from windowkeeper.core.alternation import word_alternation

WRITES = [
    # formatters and fixers run in place; a checking run writes nothing
    ("black src/app.py tests/test_app.py", ["src/app.py", "tests/test_app.py"]),
    ("black --check src/app.py", []),
    ("black -l 100 --config pyproject.toml src/app.py", ["src/app.py"]),
    ("isort src/app.py && black src/app.py", ["src/app.py"]),
    ("isort --check-only src/app.py", []),
    ("ruff format src/a.py", ["src/a.py"]),
    ("ruff format --check src/a.py", []),
    ("ruff check --fix src/a.py", ["src/a.py"]),
    ("ruff check src/a.py", []),
    ("prettier --write web/app.tsx web/util.ts", ["web/app.tsx", "web/util.ts"]),
    ("prettier web/app.tsx", []),
    ("npx prettier --write 'app/(auth)/[id]/page.tsx'", ["app/(auth)/[id]/page.tsx"]),
    ("npx eslint --fix src/index.js", ["src/index.js"]),
    ("gofmt -w cmd/main.go", ["cmd/main.go"]),
    ("gofmt -l cmd/main.go", []),
    ("clang-format -i --style=file src/a.cc", ["src/a.cc"]),
    ("rustfmt src/lib.rs", ["src/lib.rs"]),
    ("autopep8 --in-place src/a.py", ["src/a.py"]),
    ("autopep8 src/a.py", []),
    ("rubocop -a lib/a.rb", ["lib/a.rb"]),
    ("black .", []),  # a directory: which files changed is not known
    ("biome check --write src/a.ts", ["src/a.ts"]),
    # runners in front of the program
    ("python -m black src/a.py", ["src/a.py"]),
    ("python3.11 -m isort src/a.py", ["src/a.py"]),
    ("uv run ruff format src/a.py", ["src/a.py"]),
    ("poetry run black src/a.py", ["src/a.py"]),
    ("sudo sed -i 's/a/b/' /etc/app.conf", ["/etc/app.conf"]),
    ("sudo -u app sed -i 's/a/b/' /srv/app.conf", ["/srv/app.conf"]),
    ("timeout -s KILL 60 black src/x.py", ["src/x.py"]),
    ("env -C /srv -u HOME tee out.log", ["out.log"]),
    ("timeout 60 sed -i 's/a/b/' conf.ini", ["conf.ini"]),
    ("env LC_ALL=C sed -i 's/a/b/' conf.ini", ["conf.ini"]),
    # dd, awk, sponge
    ("dd if=/dev/zero of=disk.img bs=1M count=4", ["disk.img"]),
    ("dd if=disk.img of=/dev/null", []),
    ("gawk -i inplace '{print $1}' data.csv notes.txt", ["data.csv", "notes.txt"]),
    ("awk '{print $1}' data.csv", []),
    ("jq '.a = 1' cfg.json | sponge cfg.json", ["cfg.json"]),
    # paths a shell word holds with spaces, brackets or parentheses
    ('cp "a b.txt" "backup copy.txt"', ["backup copy.txt"]),
    ("echo x > 'app/[slug]/page.tsx'", ["app/[slug]/page.tsx"]),
    # scripts
    ("node -e \"require('fs').writeFileSync('out/data.json', '{}')\"", ["out/data.json"]),
    ("node <<'EOF'\nfs.appendFileSync(`log/run.txt`, 'x');\nEOF", ["log/run.txt"]),
    ("ruby -e \"File.write('config/app.yml', 'a: 1')\"", ["config/app.yml"]),
    ("ruby -e \"File.open('notes.md', 'w') { |f| f << 'x' }\"", ["notes.md"]),
    ('perl -e \'open(my $fh, ">", "out.txt") or die; print $fh 1\'', ["out.txt"]),
    ("python - <<'EOF'\nopen('a.txt', 'w').write('x')\nEOF", ["a.txt"]),
]


@pytest.mark.parametrize(("command", "modified"), WRITES)
def test_what_a_command_modifies(command: str, modified: list[str]) -> None:
    touched = command_touches(command)
    assert [path for path, how in touched if how == MODIFIED] == modified


def test_runners_in_front_of_rm_and_mv() -> None:
    assert command_touches("sudo rm -f build/out.o") == (("build/out.o", DELETED),)
    assert command_touches("nohup mv a.log b.log") == (("a.log", DELETED), ("b.log", MODIFIED))


@pytest.mark.parametrize(
    ("command", "read_only"),
    [
        ("env", True),
        ("time grep -n foo src/a.py", True),
        ("sudo cat /etc/hosts", True),
        ("sudo -u app cat /srv/app.conf", True),  # the user is no program
        ("sudo -u app rm -rf /srv/cache", False),
        ("env FOO=1 rm -rf build", False),
        ("timeout 5 black src/a.py", False),
        ("black --check src/a.py", False),  # not a known reader: not claimed read-only
    ],
)
def test_read_only_judged_by_the_program_behind_runners(command: str, read_only: bool) -> None:
    assert is_read_only(command) is read_only


def test_a_template_path_is_not_a_file_name() -> None:
    assert script_writes("fs.writeFileSync(`out/${name}.json`, data)") == []


WORDS = st.lists(st.sampled_from(["sudo", "env", "X=1", "-n", "10", "timeout", "python", "-u",
                                  "-m", "npx", "-y", "uv", "run", "black", "a.py"]),
                 min_size=1, max_size=8)  # fmt: skip


@given(WORDS)
def test_unwrapped_is_a_non_empty_suffix(words: list[str]) -> None:
    inner = unwrapped(words)
    assert inner
    assert list(inner) == words[len(words) - len(inner) :]


NAMES = st.lists(st.text("abcd-", min_size=1, max_size=4), min_size=1, max_size=8)


@given(NAMES, st.text("abcd- x", max_size=30))
def test_nested_alternation_matches_as_the_plain_one(names: list[str], text: str) -> None:
    nested = re.compile(r"\b" + word_alternation(names) + r"\b")
    plain = re.compile(r"\b(?:" + "|".join(map(re.escape, names)) + r")\b")
    assert (nested.search(text) is None) == (plain.search(text) is None)
    assert all(re.fullmatch(word_alternation(names), name) for name in names)


@pytest.mark.parametrize(
    ("command", "deleted", "modified"),
    [
        ("cp a.py b.py", [], ["b.py"]),
        ("cp src/a.py src/b.py backup", [], ["backup/a.py", "backup/b.py"]),
        ("cp src/a.py backup/", [], ["backup/a.py"]),
        ("cp -t backup src/a.py", [], ["backup/a.py"]),
        ("mv --target-directory=old a.txt b.txt", ["a.txt", "b.txt"], ["old/a.txt", "old/b.txt"]),
        ("mv x.log y.log logs/", ["x.log", "y.log"], ["logs/x.log", "logs/y.log"]),
        ("mv draft.md final.md", ["draft.md"], ["final.md"]),
    ],
)
def test_copies_and_moves_into_a_directory_name_the_files(
    command: str, deleted: list[str], modified: list[str]
) -> None:
    touched = command_touches(command)
    assert [path for path, how in touched if how == DELETED] == deleted
    assert [path for path, how in touched if how == MODIFIED] == modified


DIFF = "--- a/src/app.py\n+++ b/src/app.py\n@@ -1 +1 @@\n-x\n+y\n"


@pytest.mark.parametrize(
    ("command", "modified"),
    [
        # writing a diff to a file applies nothing (fix.patch is only a name with "patch")
        (f"cat > fix.patch <<'EOF'\n{DIFF}EOF", ["fix.patch"]),
        (f"cat > fix.patch <<'EOF'\n{DIFF}EOF\npatch -p1 < fix.patch", ["fix.patch", "src/app.py"]),
        (f"patch -p1 <<'EOF'\n{DIFF}EOF", ["src/app.py"]),
        (f"git apply --check <<'EOF'\n{DIFF}EOF", []),
        (f"sudo git apply <<'EOF'\n{DIFF.replace('app.py', 'my app.py')}EOF", ["src/my app.py"]),
    ],
)
def test_patches_in_one_command(command: str, modified: list[str]) -> None:
    assert [p for p, how in command_touches(command) if how == MODIFIED] == modified


@pytest.mark.parametrize(
    ("command", "program"),
    [
        ("sudo -u app cat /srv/app.conf", "cat"),
        ("cd /repo && X=1 timeout 5 /usr/bin/grep -n foo a.py", "grep"),
        ("export A=1; ls -la", "ls"),
        ("FOO=1", ""),
    ],
)
def test_the_program_a_command_runs(command: str, program: str) -> None:
    assert program_of(command) == program
