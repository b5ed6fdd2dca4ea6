"""Write ``src/windowkeeper/data/demo_session.jsonl``, the session of ``windowkeeper demo``.

A long coding-agent session on a fictional payments service ("ledgerline", ticket
PAY-1423): orientation, big and repeated file reads, a failing then passing test run,
a branch, a requirement change mid-session, a commit and a push, and a final user
question. Everything is generated here from a fixed seed (no clock, no network), so the
output is byte-identical on every run::

    .venv/bin/python scripts/make_demo_session.py            # rewrite the file
    .venv/bin/python scripts/make_demo_session.py --check    # exit 1 if it is stale
"""

from __future__ import annotations

import argparse
import json
import random
import sys
from pathlib import Path
from typing import Any

import demo_sources as src

OUT = Path(__file__).resolve().parents[1] / "src/windowkeeper/data/demo_session.jsonl"
REPO = "/home/dev/ledgerline"
BRANCH = "fix/PAY-1423-partial-refunds"

SYSTEM = f"""You are Forge, an autonomous coding agent working in the git repository at {REPO}.
You have these tools: bash (run a shell command), read_file, write_file, edit_file (exact
string replacement) and grep. Work in small verified steps: read before you edit, run the
tests after every change, and report what you did. Never rewrite history that is already
pushed. Ask before deleting files you did not create. Keep answers short and factual."""

TASK = """Ticket PAY-1423: partial refunds on multi-capture payments are wrong.

When a payment was authorized for more than was finally captured (split shipments, so two
or three captures), RefundService.refund() checks the requested amount against the
*authorized* amount instead of the *captured* amount, so we can refund money we never took.
Finance found two cases last week (payments pay_8f2c91 and pay_17ab02).

Please fix it and add regression tests. Constraints:
- never push to main; work on a branch named fix/PAY-1423-partial-refunds
- keep Python 3.11 compatible (prod still runs 3.11)
- use ruff for lint and format, and keep mypy clean
- don't change the public signature of RefundService.refund()"""

CHANGE = """Change of plan from product (see https://wiki.acme-payments.example/PAY/refund-limits):
a partial refund must never exceed captured minus already refunded, and when it would,
raise RefundLimitExceeded instead of silently clamping the amount like we do today. The API
should answer 422 for it. Also add a CHANGELOG entry under Unreleased. Same constraints as
before (branch, 3.11, ruff)."""

QUESTION = """Before I open the PR: which files did you change, what exactly changed in the
refund limit calculation, and did the full test suite pass on the final commit?"""


class Session:
    """Builds the message list; tool results come from the simulated repository."""

    def __init__(self, seed: int) -> None:
        self.rng = random.Random(seed)
        self.messages: list[dict[str, Any]] = [
            {"role": "system", "content": SYSTEM},
            {"role": "user", "content": TASK},
        ]
        self.files = src.repository(random.Random(seed + 1))
        self.original = dict(self.files)

    def _id(self) -> str:
        alphabet = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
        return "call_" + "".join(self.rng.choice(alphabet) for _ in range(24))

    def calls(self, thought: str | None, *calls: tuple[str, dict[str, str], str]) -> None:
        """One assistant turn with one or more tool calls, then their results."""
        entries = [(self._id(), name, args, result) for name, args, result in calls]
        last = self.messages[-1]
        if last["role"] == "assistant" and "tool_calls" not in last:
            # A remark followed by an action is one assistant turn, as a model writes it.
            self.messages.pop()
            thought = f"{last['content']}\n\n{thought}" if thought else last["content"]
        self.messages.append(
            {
                "role": "assistant",
                "content": thought,
                "tool_calls": [
                    {
                        "id": cid,
                        "type": "function",
                        "function": {"name": name, "arguments": json.dumps(args)},
                    }
                    for cid, name, args, _ in entries
                ],
            }
        )
        for cid, _, _, result in entries:
            self.messages.append({"role": "tool", "tool_call_id": cid, "content": result})

    def call(
        self, name: str, args: dict[str, str], result: str, thought: str | None = None
    ) -> None:
        self.calls(thought, (name, args, result))

    def bash(self, command: str, output: str, code: int = 0, thought: str | None = None) -> None:
        self.call("bash", {"command": command}, f"{output.rstrip()}\n[exit code {code}]", thought)

    def read(self, path: str, thought: str | None = None) -> None:
        self.call("read_file", {"path": path}, src.numbered(self.files[path]), thought)

    def edit(self, path: str, old: str, new: str, thought: str | None = None) -> None:
        text = self.files[path]
        if text.count(old) != 1:
            raise SystemExit(f"generator bug: edit of {path} does not match exactly once")
        self.files[path] = text.replace(old, new)
        result = f"Edited {path}: replaced 1 occurrence ({len(old)} -> {len(new)} chars)."
        self.call(
            "edit_file", {"path": path, "old_string": old, "new_string": new}, result, thought
        )

    def grep(self, pattern: str, path: str, thought: str | None = None) -> None:
        self.call(
            "grep", {"pattern": pattern, "path": path}, src.grep(self.files, pattern, path), thought
        )

    def say(self, text: str) -> None:
        self.messages.append({"role": "assistant", "content": text})

    def user(self, text: str) -> None:
        self.messages.append({"role": "user", "content": text})


def orientation(s: Session) -> None:
    s.bash(
        "git status && git branch --show-current",
        "On branch main\nYour branch is up to date with 'origin/main'.\n\n"
        "nothing to commit, working tree clean\nmain",
        thought="I'll start by looking at the repository state and layout.",
    )
    s.bash("ls -la && ls src/ledgerline tests", src.listing(s.files))
    s.read("pyproject.toml")
    s.grep(r"def refund|_refundable", "src/")
    s.read("src/ledgerline/refunds.py", thought="The limit check lives in refunds.py; reading it.")
    s.read("src/ledgerline/models.py")
    s.grep("authorized_amount", "src/")
    s.calls(
        "Reading the gateway and the existing refund tests together.",
        (
            "read_file",
            {"path": "src/ledgerline/gateway.py"},
            src.numbered(s.files["src/ledgerline/gateway.py"]),
        ),
        (
            "read_file",
            {"path": "tests/test_refunds.py"},
            src.numbered(s.files["tests/test_refunds.py"]),
        ),
    )
    s.calls(
        "How the API reaches the service, and the error types involved.",
        (
            "read_file",
            {"path": "src/ledgerline/api/refunds_api.py"},
            src.numbered(s.files["src/ledgerline/api/refunds_api.py"]),
        ),
        (
            "read_file",
            {"path": "src/ledgerline/errors.py"},
            src.numbered(s.files["src/ledgerline/errors.py"]),
        ),
    )
    s.read("tests/fakes.py")
    s.read("src/ledgerline/settlement.py", thought="Settlement also nets refunds; checking it.")
    s.bash(
        "python --version && ruff --version && mypy --version",
        "Python 3.11.9\nruff 0.6.9\nmypy 1.11.2 (compiled: yes)",
    )
    s.bash(
        "python -m pytest tests/test_refunds.py -q",
        src.pytest_q(s.rng, "tests/test_refunds.py", 5, []),
    )
    s.bash("git log --oneline -8", src.git_log(s.rng))
    s.bash(f"git checkout -b {BRANCH}", f"Switched to a new branch '{BRANCH}'")


def reproduce_and_fix(s: Session) -> None:
    s.edit(
        "tests/test_refunds.py",
        src.TEST_ANCHOR,
        src.TEST_PARTIAL + src.TEST_ANCHOR,
        thought="First a regression test that reproduces the multi-capture case.",
    )
    s.bash(
        "python -m pytest tests/test_refunds.py -q",
        src.pytest_q(s.rng, "tests/test_refunds.py", 6, [src.FAIL_PARTIAL]),
        code=1,
    )
    s.read("src/ledgerline/refunds.py", thought="Reproduced. Re-reading the limit calculation.")
    s.grep("captured_amount|captures", "src/ledgerline/")
    s.read("src/ledgerline/models.py")
    s.say(
        "The bug is in `RefundService._refundable_amount`: it subtracts already refunded "
        "money from `payment.authorized_amount`. For payment pay_8f2c91 that is 100.00 "
        "authorized but only 60.00 captured, so a 40.00 refund after 30.00 was already "
        "refunded passes. It must use the sum of settled captures (`Payment.captured_amount`)."
    )
    s.edit("src/ledgerline/refunds.py", src.BUG_LINE, src.FIX_V1)
    s.bash(
        "python -m pytest tests/test_refunds.py -q",
        src.pytest_q(s.rng, "tests/test_refunds.py", 6, [src.FAIL_TYPE]),
        code=1,
    )
    s.read("src/ledgerline/refunds.py", thought="captured_amount is a Decimal property, not Money.")
    s.edit("src/ledgerline/refunds.py", src.FIX_V1, src.FIX_V2)
    s.bash(
        "python -m pytest tests/test_refunds.py -q",
        src.pytest_q(s.rng, "tests/test_refunds.py", 6, []),
    )
    s.bash("python -m pytest -v", src.pytest_v(s.rng, [src.FAIL_REPORTS], refund_tests=6), code=1)
    s.calls(
        "The reports test asserts the old, buggy total; reading it with the report code.",
        (
            "read_file",
            {"path": "tests/test_reports.py"},
            src.numbered(s.files["tests/test_reports.py"]),
        ),
        (
            "read_file",
            {"path": "src/ledgerline/reports.py"},
            src.numbered(s.files["src/ledgerline/reports.py"]),
        ),
    )
    s.edit("tests/test_reports.py", src.REPORT_FIXTURE_OLD, src.REPORT_FIXTURE_NEW)
    s.bash("python -m pytest -q", src.pytest_q(s.rng, "", 6, []))
    line = src.line_of(s.files["src/ledgerline/refunds.py"], src.FIX_V2)
    s.bash(
        "ruff check src tests",
        f"src/ledgerline/refunds.py:{line}:101: E501 Line too long (106 > 100)\nFound 1 error.",
        code=1,
    )
    s.edit("src/ledgerline/refunds.py", src.FIX_V2, src.FIX_V3)
    s.bash(
        "ruff check src tests && ruff format --check src tests",
        "All checks passed!\nWould reformat: tests/test_refunds.py\n1 file would be reformatted, "
        "41 files already formatted",
        code=1,
    )
    s.bash("ruff format src tests", "1 file reformatted, 41 files left unchanged")
    s.bash("mypy src", "Success: no issues found in 24 source files")
    s.bash("git diff", src.diff(s.original, s.files))
    s.say(
        f"Fixed on branch {BRANCH}: the refund limit now uses the captured amount minus "
        f"refunds. Full suite {src.suite_size(6)} passed; ruff and mypy clean. Nothing pushed."
    )


def settlement_check(s: Session) -> None:
    s.grep("_refundable_amount|refundable", "src/", thought="Checking other callers of the limit.")
    s.read("src/ledgerline/settlement.py")
    s.read("src/ledgerline/currency.py")
    s.call(
        "write_file",
        {"path": "scripts/repro_pay1423.py", "content": src.REPRO},
        f"Wrote {len(src.REPRO.encode())} bytes to scripts/repro_pay1423.py",
    )
    s.bash("python scripts/repro_pay1423.py", src.REPRO_OUTPUT)
    s.bash(
        "rm scripts/repro_pay1423.py && git status --short",
        " M src/ledgerline/refunds.py\n M tests/test_refunds.py\n M tests/test_reports.py",
    )
    s.calls(
        "Double-checking the gateway refund path and settlement for the same assumption.",
        (
            "grep",
            {"pattern": "authorized_amount", "path": "src/"},
            src.grep(s.files, "authorized_amount", "src/"),
        ),
        (
            "read_file",
            {"path": "src/ledgerline/gateway.py"},
            src.numbered(s.files["src/ledgerline/gateway.py"]),
        ),
    )
    s.read("src/ledgerline/settlement.py")
    s.say(
        "Settlement nets captured_amount minus refunds already, and the gateway adapters pass "
        "amounts through unchanged, so only RefundService had the authorized-amount bug."
    )


def requirement_change(s: Session) -> None:
    s.user(CHANGE)
    s.grep(
        "min\\(|clamp", "src/ledgerline/refunds.py", thought="Finding where the amount is clamped."
    )
    s.read("src/ledgerline/errors.py")
    s.edit("src/ledgerline/errors.py", src.ERRORS_ANCHOR, src.ERRORS_NEW + src.ERRORS_ANCHOR)
    s.edit("src/ledgerline/refunds.py", src.IMPORT_OLD, src.IMPORT_NEW)
    s.edit("src/ledgerline/refunds.py", src.CLAMP_OLD, src.CLAMP_NEW)
    s.edit("tests/test_refunds.py", src.TEST_IMPORT_OLD, src.TEST_IMPORT_NEW)
    s.edit("tests/test_refunds.py", src.TEST_ANCHOR, src.TEST_RAISES + src.TEST_ANCHOR)
    s.bash(
        "python -m pytest tests/test_refunds.py -q",
        src.pytest_q(s.rng, "tests/test_refunds.py", 8, [src.FAIL_NOT_RAISED]),
        code=1,
    )
    s.read(
        "src/ledgerline/refunds.py",
        thought="A request for the full authorized amount takes the full-refund shortcut.",
    )
    s.edit("src/ledgerline/refunds.py", src.SHORTCUT_OLD, src.SHORTCUT_NEW)
    s.bash(
        "python -m pytest tests/test_refunds.py -q",
        src.pytest_q(s.rng, "tests/test_refunds.py", 8, []),
    )
    s.bash(
        "python -m pytest -q",
        src.pytest_q(s.rng, "", 8, [src.FAIL_API_1, src.FAIL_API_2], src.ERRORS_REPORTS),
        code=1,
    )
    s.read(
        "tests/test_reports.py",
        thought="The report fixture now hits the new limit; the API maps the new error to 500.",
    )
    s.edit("tests/test_reports.py", src.REPORT_ASK_OLD, src.REPORT_ASK_NEW)
    s.read("src/ledgerline/api/refunds_api.py")
    s.edit("src/ledgerline/api/refunds_api.py", src.API_OLD, src.API_NEW)
    s.bash("python -m pytest -v", src.pytest_v(s.rng, []))
    s.read("CHANGELOG.md")
    s.edit("CHANGELOG.md", src.CHANGELOG_ANCHOR, src.CHANGELOG_ANCHOR + src.CHANGELOG_ENTRY)
    s.bash(
        "ruff check src tests && ruff format --check src tests && mypy src",
        "All checks passed!\n42 files already formatted\n"
        "Success: no issues found in 24 source files",
    )
    s.bash("git diff --stat", src.diff_stat(s.original, s.files))


def review(s: Session) -> None:
    s.bash(
        "git diff",
        src.diff(s.original, s.files),
        thought="Reviewing the whole change before committing.",
    )
    s.read("tests/test_refunds.py")
    s.bash(
        "python -m pytest --cov=ledgerline --cov-report=term-missing -q",
        src.coverage(s.rng, s.files),
    )
    s.read("src/ledgerline/refunds.py")
    s.grep("RefundNotAllowed|RefundLimitExceeded", "", thought="Every place the two errors meet.")
    s.read("src/ledgerline/models.py")
    s.say(
        "Review done: refunds.py is fully covered by the new tests except the logging branch; "
        "the API maps RefundLimitExceeded to 422 with `limit` and `requested` in the body."
    )


def ship(s: Session) -> None:
    s.bash(
        "git add -A && git commit -m 'PAY-1423: limit partial refunds to the captured amount'",
        f"[{BRANCH} 7c41e9a] PAY-1423: limit partial refunds to the captured amount\n"
        f" {src.changed_files(s.original, s.files)} files changed",
    )
    s.bash(
        "git log --oneline -3",
        f"7c41e9a (HEAD -> {BRANCH}) PAY-1423: limit partial refunds to the "
        "captured amount\n3e0b5d2 (origin/main, origin/HEAD, main) Bump httpx to 0.27.2\n"
        "b81f4c7 PAY-1398: idempotency keys for capture retries",
    )
    s.bash(f"git push -u origin {BRANCH}", src.push_output(BRANCH))
    s.say(
        f"Committed 7c41e9a on {BRANCH} and pushed the branch (not main). Refunds above "
        "captured minus refunded now raise RefundLimitExceeded, answered as HTTP 422; "
        f"CHANGELOG updated; {src.suite_size(8)} tests pass, ruff and mypy clean."
    )
    s.user(QUESTION)


def build(seed: int = 1423) -> list[dict[str, Any]]:
    session = Session(seed)
    for phase in (orientation, reproduce_and_fix, settlement_check):
        phase(session)
    for phase in (requirement_change, review, ship):
        phase(session)
    return session.messages


def render(messages: list[dict[str, Any]]) -> str:
    return "".join(json.dumps(m, ensure_ascii=False) + "\n" for m in messages)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="fail if the file is out of date")
    parser.add_argument("-o", "--output", type=Path, default=OUT)
    args = parser.parse_args()
    text = render(build())
    if args.check:
        current = args.output.read_text(encoding="utf-8") if args.output.exists() else ""
        if current != text:
            print(
                f"{args.output} is out of date; run scripts/make_demo_session.py", file=sys.stderr
            )
            return 1
        return 0
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(text, encoding="utf-8")
    print(f"wrote {args.output} ({len(text.splitlines())} messages, {len(text):,} chars)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
