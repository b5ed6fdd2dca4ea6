"""The fast fact scans agree with the plain patterns they stand in for.

Fact extraction avoids regular expressions that are tried at every position of a text
(literal hints, a hex byte mask, clue words, candidate lines); these properties compare
each shortcut with the straightforward pattern on texts built from the shapes it must
recognize.
"""

from __future__ import annotations

import re
from typing import Any

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from windowkeeper.analysis import checks, installs, probes
from windowkeeper.analysis.facts import collapse, dedupe, sentences
from windowkeeper.analysis.identifiers import text_identifiers
from windowkeeper.analysis.outputs import error_lines, is_test_command
from windowkeeper.analysis.toolshapes import exit_code, shorten
from windowkeeper.summary.handoff.decide import _DECISION as DECISION
from windowkeeper.summary.handoff.decide import MAX_DECISIONS, decisions

_PIECES = [
    " ", "\n", "\t", "-", ".", ":", "#", "/", "_", "=", "'", "x", "A", "é", "ı", "ſ", "İ",
    "\u212a", "1a2b3c4", "deadbeef42", "abc-def-0123-4567-89ab-cdef01234567", "ABC-12", "UTF-8",
    "spotter-gqc.4", "spotter-3r6", "a1b", "-10s", "node-v18", "python-3.11", "#123",
    "commit ", "agent_id: ", "id=", "sha ",
    "https://x.io/a", "Error", "ValueError: bad", "error: x", "E   assert 1", "FAILED t.py",
    "npm ERR! x", "bash: x: command not found", "** (Foo) x", "Caused by: y", "--- FAIL: t",
    "x.py:3: error", "Traceback (most recent call last)", "fatal: no", "pytest", "go test",
    "npm run test", "make check", "/testbed", "python test_a.py", "cargo nextest", "I will ",
    "use ", "instead of ", "The fix is ", "Decided. ", "```\ncode\n```", "\n- ", "\n\n",
    "rather than", "Root cause", "we'll ", "WE WILL ", "Let's ", "go with", "Going with",
    "opted", "chose", "chosen", "the bug is", "The issue was ", "culprit lives", "the ",
    "turns out", "so only", "decide to", "İnstead", "ıssue", "ſo only", "will be", "the fix",
]  # fmt: skip
_texts = st.lists(st.sampled_from(_PIECES), max_size=30).map("".join)

# The plain patterns (before the shortcuts), as the reference.
_TICKET = re.compile(r"(?<![\w-])([A-Z][A-Z0-9]{1,9})-\d{1,6}(?![\w-])")
_SLUG = re.compile(r"(?<![\w./-])[a-z][a-z0-9]*(?:-[a-z0-9]+)+(?:\.\d+)+(?![\w-]|\.\w)")
_HASH = re.compile(
    r"(?<![\w./-])[a-z][a-z0-9]{1,20}-(?=[a-z]{0,7}\d)(?=\d{0,7}[a-z])[a-z0-9]{3,8}(?![\w-]|\.\w)"
)
_NOT_HASH = re.compile(r"\d+(?:s|th|st|nd|rd|px|em|ms|kb|mb|gb|bit|k|m)|v?\d+[a-z]?")
_ISSUE = re.compile(r"(?<![\w&#/])#\d{1,6}\b")
_SHA = re.compile(r"(?<![\w-])(?=[0-9a-f]{0,39}\d)(?=[0-9a-f]{0,39}[a-f])[0-9a-f]{7,40}(?![\w-])")
_UUID = re.compile(r"(?<![\w-])[0-9a-fA-F]{8}(?:-[0-9a-fA-F]{4}){3}-[0-9a-fA-F]{12}(?![\w-])")
_LABELLED = re.compile(
    r"(?i:\b(?:commit|sha|revision|rev|agent_?id|task_?id|run_?id|id)\b)[\s:=#\"']{1,3}"
    r"([0-9a-f]{7,40})(?![\w-])"
)
_NOT_TICKETS = {"UTF", "SHA", "ISO", "GPT", "TLS", "SSL", "AES", "RSA", "HTTP", "UCS"}
_URL = re.compile(r"https?://[^\s<>\"'`\])}]+")
_TEST = re.compile(
    r"\b(?:pytest|py\.test|tox|nox|unittest|runtests\.py|manage\.py\s+test"
    r"|(?:npm|yarn|pnpm|bun)\s+(?:run\s+)?test|jest|vitest|mocha|cargo\s+(?:test|nextest)"
    r"|go\s+test|mix\s+test|rspec|phpunit|make\s+(?:test|check)|ctest|mvn\s+test"
    r"|gradlew?\s+test|dotnet\s+test)\b"
)
_ERROR_LINE = re.compile(
    r"""^[ \t]*(?:
        (?:[A-Za-z_]\w*\.)*(?:[A-Z]\w*)?(?:Error|Exception|Failure)(?::[ \t].*|:?[ \t]*)$
      | (?i:error|fatal|panic|fail)(?:\[[\w-]+\])?:[ \t].*
      | \S+?:\d+:(?:\d+:)?[ \t]*(?:(?i:fatal[ ]error|error)\b|\w*(?:Error|Exception)\b).*
      | \S+\(\d+,\d+\):[ \t]*error\b.*
      | (?:FAILED|ERROR)[ \t]+[\w/.\\-]+.*
      | E[ \t]{2,}.*(?:assert|Error|Exception|[Ff]ailed|not[ ]found|[Ee]xpected).*
      | npm[ ](?:ERR!|error)[ \t].*
      | (?:ba|z)?sh:[ \t].*(?:command[ ]not[ ]found|No[ ]such[ ]file|Permission[ ]denied).*
      | \*\*[ ]\([\w.]+\)[ \t].*
      | thread[ ]'.*'[ ]panicked[ ]at.*
      | Exception[ ]in[ ]thread[ ].*
      | Caused[ ]by:[ \t].*
      | ---[ ]FAIL:[ \t].*
    )""",
    re.MULTILINE | re.VERBOSE,
)


def _identifiers(text: str, *, uuids: bool, shas: bool) -> list[str]:
    tickets = _TICKET.finditer(text)
    found = [(m.start(), m.group(0)) for m in tickets if m.group(1) not in _NOT_TICKETS]
    found += [(m.start(), m.group(0)) for m in _SLUG.finditer(text) if _slug(m.group(0))]
    hashed = (m for m in _HASH.finditer(text) if not _NOT_HASH.fullmatch(m.group(0).split("-")[1]))
    found += [(m.start(), m.group(0)) for m in hashed]
    found += [(m.start(), m.group(0)) for m in _ISSUE.finditer(text)]
    if shas:
        found += [(m.start(), m.group(0)) for m in _SHA.finditer(text)]
    else:
        labelled = ((m.start(), m.group(1)) for m in _LABELLED.finditer(text))
        found += [(at, v) for at, v in labelled if re.search("[0-9]", v) and re.search("[a-f]", v)]
    if uuids:
        found += [(m.start(), m.group(0)) for m in _UUID.finditer(text)]
    urls = _URL.finditer(text)
    found += [(m.start(), shorten(m.group(0).rstrip(".,;:!?*`"), 200)) for m in urls]
    return list(dict.fromkeys(value for _, value in sorted(found)))


def _slug(value: str) -> bool:
    return all(any(c.isalpha() for c in p) for p in value.split(".", 1)[0].split("-")[1:])


@settings(max_examples=400, deadline=None)
@given(_texts, st.booleans(), st.booleans())
def test_identifiers_match_the_plain_patterns(text: str, uuids: bool, shas: bool) -> None:
    assert text_identifiers(text, uuids=uuids, shas=shas) == _identifiers(
        text, uuids=uuids, shas=shas
    )


@settings(max_examples=400, deadline=None)
@given(_texts)
def test_error_lines_match_the_plain_pattern(text: str) -> None:
    lines = (shorten(m.group(0).strip(), 200) for m in _ERROR_LINE.finditer(text))
    assert error_lines(text) == list(dict.fromkeys(lines))


@settings(max_examples=400, deadline=None)
@given(_texts)
def test_test_commands_match_the_plain_pattern(text: str) -> None:
    assert is_test_command(text) == (_TEST.search(text) is not None)


@settings(max_examples=300, deadline=None)
@given(st.lists(_texts, max_size=3))
# Two decisions in one text (hypothesis found this one): they came out last first.
@example(["https://x.io/a Decided. Root cause rather than"])
def test_decisions_match_a_scan_of_every_sentence(texts: list[str]) -> None:
    expected = [
        collapse(s, 300)
        for text in texts
        for s in sentences(text)
        if len(s) >= 20 and s[-1] not in "?:" and DECISION.search(s)
    ]
    found = decisions(list(enumerate(texts)), ())
    assert list(found) == dedupe(expected, keep_last=True)[-MAX_DECISIONS:]


_DECISION_PHRASES = [
    "decided", "decide to", "instead of", "rather than", "the fix is", "the fix was",
    "the fix will be", "root cause", "I'll use", "I will go with", "we'll switch",
    "we will keep", "let's avoid", "let's replace", "going with", "opted", "chose", "chosen",
    "the bug is", "the problem was", "the issue lives", "the culprit is", "turns out",
    "so only", "because", "doesn't support", "does not support", "not supported",
    "will fail", "would fail", "the reason is", "workaround", "I need to rewrite",
    "we need to switch",
]  # fmt: skip


@pytest.mark.parametrize("phrase", _DECISION_PHRASES)
@pytest.mark.parametrize("case", [str, str.upper, str.title])
def test_every_decision_phrase_is_found(phrase: str, case: Any) -> None:
    """Each alternative of the decision pattern, in any case and wrapped across a line
    break, survives the clue gate (the clues are a superset of the pattern)."""
    words = case(phrase).split(" ")
    for text in (" ".join(words), "\n".join(words)):
        sentence = f"After reading the module, {text} the older code path for now."
        assert DECISION.search(" ".join(sentence.split()))
        assert decisions([(0, sentence)], ()) == (" ".join(sentence.split()),), text


_EXIT_REFERENCE = (
    re.compile(r"<returncode>\s*(-?\d+)\s*</returncode>"),
    re.compile(r"exit(?:ed)?[ _](?:code|status)\s*[:=]?\s*(-?\d+)", re.IGNORECASE),
    re.compile(r'"exit_code"\s*:\s*(-?\d+)'),
    re.compile(r"returned non-zero exit status (\d+)"),
    re.compile(r"\bexit (\d+)\b"),
)
_EXIT_PIECES = [
    "exit code ", "EXIT CODE", "Exit Status: ", "exited_status=", "exit_code", '"exit_code": ',
    "exit ", "Exit ", "<returncode>", "</returncode>", "returned non-zero exit status ", "-",
    "0", "1", "127", " ", "\n", ":", "=", "x", "ı", "ſ", "İ", "K", "é", "[Command finished with ",
    "_", "\u0663", "\u00a0", "ex", "EX", "it", "t", "T", " code", " ſtatus", " STATUS", "\u0307",
]  # fmt: skip


def _reference_exit(text: str) -> int | None:
    best: tuple[int, int] | None = None  # the last one mentioned wins (the first pattern on a tie)
    for pattern in _EXIT_REFERENCE:
        for match in pattern.finditer(text):
            if best is None or match.start() > best[0]:
                best = (match.start(), int(match.group(1)))
    return None if best is None else best[1]


@settings(max_examples=400, deadline=None)
@given(st.lists(st.sampled_from(_EXIT_PIECES), max_size=30).map("".join))
def test_exit_codes_match_the_plain_patterns(text: str) -> None:
    assert exit_code(text) == _reference_exit(text)


@pytest.mark.parametrize(
    ("text", "code"),
    [
        ("exit exıt code 3", 3),  # a case-insensitive "i" is also a dotless one
        ("exit EXIT ſtatus 4", 4),  # and "s" a long one
        ("İ" * 15 + " exit code 7 exit 5", 5),  # "İ" lowers to two characters
        ("é exit code 7 exit 5", 5),
    ],
)
def test_exit_codes_in_non_ascii_text(text: str, code: int) -> None:
    assert _reference_exit(text) == code
    assert exit_code(text) == code


_MISSING_PIECES = [
    " ", "\n", "x", "é", "ı", "ſ", "İ", "\u212a", "'", "No module named 'pytz.tz'",
    "NO MODULE NAMED yaml", "Cannot find module '@x/y'", "rg: command not found",
    "zsh: command not found: fd", "could not find package foo", "unknown module bar",
    "miſſing dependency baz", "un\u212anown package q", "Package 'libfoo' was not found",
    "requires pytest as a test dependency", "cannot load such file -- json/ext", "Not Found",
    "missing", "the: not found", "module", "requires", "no module", "could not",
]  # fmt: skip


def _plain_missing(text: str) -> tuple[str, ...]:
    """missing_names without its gate: the pattern over both parts."""
    found = [
        next(g for g in m.groups() if g).split(".")[0].split("/")[0].lower()
        for part in (text[:3_000], text[-3_000:] if len(text) > 3_000 else "")
        for m in installs._MISSING.finditer(part)
    ]
    return tuple(dict.fromkeys(n for n in found if n and n not in {"the", "a", "it"}))


@settings(max_examples=400, deadline=None)
@given(
    st.lists(st.sampled_from(_MISSING_PIECES), max_size=30).map("".join),
    st.sampled_from([0, 2_990, 6_000]),
    st.lists(st.sampled_from(_MISSING_PIECES), max_size=30).map("".join),
)
def test_missing_names_match_the_ungated_pattern(head: str, padding: int, tail: str) -> None:
    # the padding puts the tail in the second part, or across the first part's end
    text = head + "." * padding + tail
    assert installs.missing_names(text) == _plain_missing(text)


def test_a_gate_word_in_folded_letters_still_names_the_missing_module() -> None:
    # IGNORECASE matches the Kelvin sign to "k": Hyperscan's ASCII caseless would not
    assert installs.missing_names("un\u212anown module foo") == ("foo",)
    assert installs.missing_names("nothing is absent here") == ()


_COMMAND_PIECES = [
    " ", "\t", "\n", "x", "|", ">", "&", "&&", ";", "2>&1", " 2>&1", " >/dev/null", ">> out",
    "| tail -5", "|head", " | grep x", "nohup ", "run_in_background", " &", "mypy", "ruff",
    "make", "cd a", "django", "-m django test", "python -m pytest", "python3 -c 'x'",
]  # fmt: skip


@settings(max_examples=400, deadline=None)
@given(st.lists(st.sampled_from(_COMMAND_PIECES), max_size=20).map("".join))
def test_check_gates_match_the_plain_patterns(command: str) -> None:
    plain = " ".join(checks._REDIRECT.sub("", checks._TRIM.sub("", command)).split())
    assert checks._strip(command) == plain
    assert checks._runs_in_background(command) == bool(checks._BACKGROUND.search(command))
    assert probes.is_probe(command) == probes._is_probe.__wrapped__(command[:2_000])


def test_a_texts_decisions_keep_the_order_they_were_written_in() -> None:
    first = "We decided to keep the old parser for the legacy files."
    second = "The root cause is the cache layer, not the parser."
    third = "Going with a smaller cache instead of a new parser."
    found = decisions([(0, f"{first} {second}"), (3, "Nothing here."), (5, third)], ())
    assert found == (first, second, third)
