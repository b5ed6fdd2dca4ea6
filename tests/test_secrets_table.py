"""Secrets never reach what windowkeeper writes itself (issue 10, Deliver 5).

One table of credential formats, each written the way it shows up in agent transcripts,
is pushed through every path that writes text: ``redact`` itself, the extractive
summarizer (its sections and the state ledger), the LLM summarizer (the request sent to a
loopback server and the handoff built from its answer), ``sessions search`` and
``recall`` (masked unless asked to reveal; the archive keeps the original).

Every case carries a canary word next to its secret; each check first asserts that the
canary reached the text under test, so a secret cannot "pass" by not being there at all.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import date
from pathlib import Path

import pytest
from typer.testing import CliRunner

from windowkeeper import ContextCompressor, LLMSummarizer, LLMSummarizerConfig
from windowkeeper.cli.sessions import sessions_app
from windowkeeper.core.messages import Message, content_text
from windowkeeper.store import RecallTool, compact_session, open_store
from windowkeeper.summary.protocol import SummaryOutcome, SummaryRequest
from windowkeeper.summary.redact import REDACTED, redact
from windowkeeper.testing import OpenAITestServer, Step


@dataclass(frozen=True)
class Case:
    name: str
    secret: str
    template: str  # ``{s}``: where the secret goes

    @property
    def canary(self) -> str:
        return f"canary{self.name.replace('_', '')}"

    @property
    def text(self) -> str:
        return self.template.format(s=self.secret)


TABLE = [
    Case("openai", "sk-proj-Ab3dEf6hIj9kLm2nOp5qRs8tUv1wXy4z", "export OPENAI_API_KEY={s}"),
    Case("openai_bare", "sk-Zq8Wm2Xn4Bv6Cx1Lk9Jh3Gf5Ds7Ap0Qw", "the key is {s} now"),
    Case("anthropic", "sk-ant-api03-Zx9Yw8Vu7Ts6Rq5Po4Nm3Lk2Ji1Hg0Fe", "anthropic key {s}"),
    Case("aws_key_id", "AKIAQ3EGRXAMPLE7KD2B", "aws_access_key_id = {s}"),
    Case("aws_secret", "wJalrXUtnFEMI/K7MDENG/bPxRfiCYzEXAMPLEKEY", "aws_secret_access_key={s}"),
    Case("github", "ghp_R4nd0mT0k3nV4lu3Abcdefghij0123456789", "GH token {s} used"),
    Case("github_pat", "github_pat_11ABCDEFG0aBcDeFgHiJkL_mNoPqRsTuVwXyZ0123", "pat {s}"),
    Case("stripe", "sk_live_51HxYzAbCdEfGhIjKlMnOpQr", "charge with {s} then"),
    Case("stripe_restricted", "rk_live_51HxYzQwErTyUiOpAsDfGhJk", "restricted {s}"),
    Case("slack", "xoxb-123456789012-1234567890123-AbCdEfGhIjKlMnOpQrStUvWx", "bot {s}"),
    Case(
        "slack_webhook",
        "T00000000/B00000000/XXXXXXXXXXXXXXXXXXXXXXXX",
        "post to https://hooks.slack.com/services/{s} ok",
    ),
    Case(
        "jwt",
        "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0."
        "dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U",
        "session cookie {s} expired",
    ),
    # JWS compact form whose payload is not JSON (issue 25 point 3): the header decodes to
    # {"alg":"RS256"}; the payload may be anything.
    Case(
        "jws_bare",
        "eyJhbGciOiJSUzI1NiJ9.HEADUSERxAbCdEfGhIjKlMnOpQrStUvWxYz01234."
        "AbCdEfGhIjKlMnOpQrStUvWxYz0123456789abcd",
        "the session cookie was {s}",
    ),
    Case("bearer", "Zm9vYmFyYmF6cXV4MTIzNDU2Nzg5MA", "curl -H 'Authorization: Bearer {s}' api"),
    Case("url_password", "hunter2hunter2", "mongodb+srv://admin:{s}@cluster0.mongodb.net/test"),
    Case(
        "url_password_any_chars",
        "pa/ss:w@rd!9x",
        "DATABASE_URL=postgres://app:{s}@db.internal:5432/main",
    ),
    Case("password_single_quoted", "correct horse battery", "use password='{s}' for admin"),
    Case("password_double_quoted", "s3cr3t-Value-77", 'settings {{"password": "{s}"}}'),
    Case("password_bare", "Tr0ub4dor-and-3", "mysql -u root password={s} -h db"),
    Case(
        "private_key",
        "MIIEowIBAAKCAQEA7bq98ExampleKeyMaterialXyZ",
        "-----BEGIN RSA PRIVATE KEY-----\n{s}\n-----END RSA PRIVATE KEY-----",
    ),
    Case("env_line", "p4ssw0rd-from-env", "DB_PASS={s}"),
    Case("env_secret", "a1b2c3d4e5f6a7b8c9d0", "export SECRET_KEY_BASE={s}"),
    Case("npm", "npm_AbCdEfGhIjKlMnOpQrStUvWxYz0123456789", "//registry.npmjs.org/:_authToken={s}"),
    Case("pypi", "pypi-AgEIcHlwaS5vcmcCJGFiY2RlZmdoaWprbG1ub3BxcnN0dXZ3eHl6", "twine -p {s}"),
    Case("google", "AIzaSyD-9tSrke72PouQMnMX-a7eZSW0jkFMBWY", "maps key {s}"),
]
IDS = [case.name for case in TABLE]
FOCUS = "the deploy"  # a manual compaction with a focus always writes a handoff (tier 2)


def _session(case: Case) -> list[Message]:
    """The secret in a user message, a shell command, an error line and assistant prose;
    the newest user message (kept or restated verbatim) holds none."""
    line = f"{case.canary} {case.text}"
    messages: list[Message] = [
        {"role": "system", "content": "You are a deploy agent."},
        {"role": "user", "content": "Deploy the billing service."},
        {"role": "assistant", "content": "Starting."},
    ]
    for n in range(6):
        cid = f"call_{n}"
        command = json.dumps({"command": f"deploy --step {n} '{line}'"})
        call = {"id": cid, "type": "function", "function": {"name": "bash", "arguments": command}}
        messages += [
            {"role": "user", "content": f"Step {n}: remember {line}"},
            {
                "role": "assistant",
                "content": f"I will use {line} for step {n}.",
                "tool_calls": [call],
            },
            {
                "role": "tool",
                "tool_call_id": cid,
                "content": f"deploying\nError: step {n} rejected {line}\n" + "log\n" * 1500
                + "[exit code 1]",
            },
        ]  # fmt: skip
    messages += [
        {"role": "assistant", "content": "Step 5 failed; retrying after the fix."},
        {"role": "user", "content": "Please continue with the deploy."},
    ]
    return messages


def _texts(message: Message) -> list[str]:
    calls = message.get("tool_calls") or []
    return [content_text(message.get("content")), *(c["function"]["arguments"] for c in calls)]


def _written(messages: list[Message], output: list[Message]) -> str:
    """The text windowkeeper wrote into the output: every changed message's text, less the
    verbatim copies of input texts it carries (a handoff merged into a kept message)."""
    originals = {json.dumps(m, sort_keys=True) for m in messages}
    copies = sorted({t for m in messages for t in _texts(m) if t}, key=len, reverse=True)
    written = []
    for message in output:
        if json.dumps(message, sort_keys=True) in originals:
            continue
        for text in _texts(message):
            for copy in copies:
                text = text.replace(copy, "")
            written.append(text)
    return "\n".join(written)


def _assert_clean(text: str, case: Case, where: str) -> None:
    assert case.canary in text, f"{where}: the case never reached it (nothing was tested)"
    assert case.secret not in text, f"{where}: {case.name} leaked"
    for fragment in _fragments(case.secret):
        assert fragment not in text, f"{where}: part of {case.name} leaked ({fragment!r})"


def _fragments(secret: str) -> list[str]:
    """Long pieces of the secret (a mask that keeps half a key is a leak too)."""
    pieces = [p for p in secret.replace("/", " ").replace(".", " ").split() if len(p) >= 12]
    return [p[: len(p) // 2 + 4] for p in pieces]


def _compressor(**kwargs: object) -> ContextCompressor:
    return ContextCompressor(context_length=16_000, today=lambda: date(2025, 1, 1), **kwargs)  # type: ignore[arg-type]


@pytest.mark.parametrize("case", TABLE, ids=IDS)
def test_redact_masks_the_format(case: Case) -> None:
    line = f"{case.canary} {case.text}"
    masked = redact(line)
    _assert_clean(masked, case, "redact")
    assert REDACTED in masked and redact(masked) == masked


def test_the_table_covers_at_least_14_formats() -> None:
    assert len({case.name.split("_")[0] for case in TABLE}) >= 14


@pytest.mark.parametrize("case", TABLE, ids=IDS)
def test_pruned_stubs_carry_no_secret(case: Case) -> None:
    """Tier 1 (prune only) writes one-line stubs naming the commands it replaced."""
    messages = _session(case)
    result = _compressor().compress(messages, force=True)
    assert result.report.compressed
    _assert_clean(_written(messages, result.messages), case, "stubs and rewritten messages")


@pytest.mark.parametrize("case", TABLE, ids=IDS)
def test_extractive_handoff_and_ledger(case: Case) -> None:
    messages = _session(case)
    result = _compressor().compress(messages, force=True, focus_topic=FOCUS)  # tier 2
    assert result.report.compressed and result.summary
    _assert_clean(result.summary, case, "handoff")
    ledger = result.summary.split("## State Ledger", 1)[-1]
    assert "## State Ledger" in result.summary
    _assert_clean(ledger, case, "ledger")
    _assert_clean(_written(messages, result.messages), case, "rewritten messages")


@pytest.mark.parametrize("case", TABLE, ids=IDS)
def test_llm_summarizer_request_and_handoff(case: Case) -> None:
    messages = _session(case)
    # The model echoes the secret back: the handoff built from its answer must not.
    answer = f"## Goal\nDeploy billing; {case.canary} {case.text}\n\n## Next Steps\nRetry.\n"
    with OpenAITestServer() as server:
        server.script(Step.completion(answer))
        config = LLMSummarizerConfig(model="summ", base_url=server.base_url, timeout=5)
        compressor = _compressor(summarizer=LLMSummarizer(config))
        result = compressor.compress(messages, force=True, focus_topic=FOCUS)
        requests = list(server.requests)
    assert result.report.compressed and not result.report.fallback_used
    sent = "\n".join(json.dumps(r.body, ensure_ascii=False) for r in requests if r.body)
    _assert_clean(sent.replace("\\n", "\n"), case, "summarizer request")
    assert result.summary is not None
    _assert_clean(result.summary, case, "LLM handoff")


def test_search_and_recall_mask_unless_revealed(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 's.db'}"
    with open_store(url) as store:
        sessions = {}
        for case in TABLE:
            sid = store.create_session(_session(case)).id
            compressor = _compressor()
            result = compact_session(store, sid, compressor, force=True, focus_topic=FOCUS).result
            assert result.report.compressed
            sessions[case.name] = (sid, result)
        runner = CliRunner()
        for case in TABLE:
            sid, result = sessions[case.name]
            masked = runner.invoke(sessions_app, ["search", case.canary, "--store", url])
            assert masked.exit_code == 0, masked.output
            _assert_clean(masked.stdout, case, "sessions search")
            shown = runner.invoke(sessions_app, ["search", case.canary, "--store", url, "--reveal"])
            assert case.secret[:10] in shown.stdout  # asked to reveal: the original

            recall = RecallTool(store, sid, max_chars=1_000_000)
            handles = [i.handle for i in result.archived if case.secret in content_text(
                i.message.get("content")) or case.secret in json.dumps(i.message)]  # fmt: skip
            assert handles, "no archived original holds the secret"
            for handle in handles:
                answer = recall.call("recall", {"handle": handle}) or ""
                _assert_clean(answer, case, "recall by handle")
                revealed = recall.call("recall", {"handle": handle, "reveal": True}) or ""
                assert case.secret in revealed  # the archive keeps the original
                assert store.archived(sid, [handle])[0].message  # and the original message
            found = recall.call("recall", {"query": case.canary, "limit": 20}) or ""
            _assert_clean(found, case, "recall by query")


class Recording:
    """A user's own summarizer: records what it was sent and writes a short handoff."""

    name = "recording"

    def __init__(self) -> None:
        self.sent: list[str] = []

    def summarize(self, request: SummaryRequest) -> SummaryOutcome:
        self.sent = [json.dumps(m, ensure_ascii=False) for m in request.turns]
        return SummaryOutcome(body="## Goal\nRead the settings.", summarizer=self.name)


def _read_session(case: Case) -> list[Message]:
    """The secret only in a file the agent read (its extraction view is not masked)."""
    messages: list[Message] = [
        {"role": "system", "content": "You are a deploy agent."},
        {"role": "user", "content": "Check the deploy settings."},
    ]
    for n in range(6):
        cid = f"read_{n}"
        args = json.dumps({"path": f"config/settings_{n}.env"})
        call = {"id": cid, "type": "function", "function": {"name": "read_file", "arguments": args}}
        content = f"# settings {n}\n{case.canary} {case.text}\n" + "option = 1\n" * 1500
        messages += [
            {"role": "assistant", "content": f"Reading settings {n}.", "tool_calls": [call]},
            {"role": "tool", "tool_call_id": cid, "content": content},
            {"role": "user", "content": f"Next file after {n}."},
        ]
    messages.append({"role": "user", "content": "Please continue with the deploy."})
    return messages


@pytest.mark.parametrize("case", TABLE, ids=IDS)
def test_a_secret_in_a_read_file_reaches_neither_handoff_nor_summarizer(case: Case) -> None:
    _assert_neither_handoff_nor_summarizer(_read_session(case), case, ["settings_0.env"])


def _assert_neither_handoff_nor_summarizer(
    messages: list[Message], case: Case, paths: list[str]
) -> None:
    """The extractive handoff names ``paths`` and holds no part of the secret; a
    summarizer of the user's own is sent the turns masked."""
    result = _compressor().compress(messages, force=True, focus_topic=FOCUS)
    assert result.report.compressed and result.summary
    for path in paths:
        assert path in result.summary  # the read or write itself is in the handoff
    assert case.secret not in result.summary
    assert not any(fragment in result.summary for fragment in _fragments(case.secret))
    recording = Recording()
    result = _compressor(summarizer=recording).compress(messages, force=True, focus_topic=FOCUS)
    assert result.report.compressed and not result.report.fallback_used
    _assert_clean("\n".join(recording.sent).replace("\\n", "\n"), case, "custom summarizer")


def _write_session(case: Case) -> list[Message]:
    """The secret only in the content of files the agent wrote: a whole file, an edit, an
    editor's create and a diff (extraction takes only their paths, and does not mask them)."""
    line = f"{case.canary} {case.text}"
    diff = f"--- a/app/keys.py\n+++ b/app/keys.py\n@@ -1 +1 @@\n-old\n+{line}\n"
    calls = [
        ("Write", {"file_path": "app/settings.env", "content": f"{line}\n" + "x = 1\n" * 900}),
        ("Edit", {"file_path": "app/config.py", "old_string": "KEY = None",
                  "new_string": f"KEY = None  # {line}"}),
        ("str_replace_editor", {"command": "create", "path": "app/creds.txt", "file_text": line}),
        ("write_file", {"path": "fix.patch", "content": diff}),
    ]  # fmt: skip
    messages: list[Message] = [
        {"role": "system", "content": "You are a deploy agent."},
        {"role": "user", "content": "Write the deploy settings."},
    ]
    for n, (name, args) in enumerate(calls * 2):
        cid = f"write_{n}"
        call = {"id": cid, "type": "function",
                "function": {"name": name, "arguments": json.dumps(args)}}  # fmt: skip
        messages += [
            {"role": "assistant", "content": f"Writing step {n}.", "tool_calls": [call]},
            {"role": "tool", "tool_call_id": cid, "content": "ok\n" + "done\n" * 900},
            {"role": "user", "content": f"Next after {n}."},
        ]
    messages.append({"role": "user", "content": "Please continue with the deploy."})
    return messages


@pytest.mark.parametrize("case", TABLE, ids=IDS)
def test_a_secret_in_written_content_reaches_neither_handoff_nor_summarizer(case: Case) -> None:
    written = ["settings.env", "config.py", "creds.txt", "fix.patch"]
    _assert_neither_handoff_nor_summarizer(_write_session(case), case, written)


@pytest.mark.parametrize("shift", [-40, -12, -5, -1, 0, 1, 7])
def test_a_long_text_is_masked_across_the_pieces_it_is_scanned_in(shift: int) -> None:
    """Case-insensitive rules scan a long text in overlapping lower-cased pieces (8,192
    characters): a secret whose key word straddles a piece boundary is still masked."""
    secret = "Hunter2-Hunter2-xyz"
    line = f'PassWord = "{secret}" and Authorization: Bearer Zm9vYmFyYmF6cXV4MTIzNDU2'
    for at in (8_192 + shift, 3 * 8_192 + shift):
        text = "x" * at + line + "\nlog line\n" * 2_000
        masked = redact(text)
        assert secret not in masked and "Zm9vYmFyYmF6" not in masked
        assert masked.count(REDACTED) == 2 and masked.startswith("x" * at + "PassWord")
