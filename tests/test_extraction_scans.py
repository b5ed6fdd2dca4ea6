"""The extraction's cheaper scans (issue 27): each gives what the scan it replaced gave,
compared on generated input — the shell tokenizer's plain-line path, its faster word
pattern and its one-pass form (and the quotes dropped without a substitution) against the
pattern alone, the gates in front of the django test, redirect and environment-prefix
patterns, and the word clues in front of the claim and telling-line patterns (with the
characters case-insensitive matching folds to ASCII letters)."""

from __future__ import annotations

import re

from hypothesis import given, settings
from hypothesis import strategies as st

from windowkeeper.analysis import checks, shellwords, steps
from windowkeeper.analysis.facts import Clues, clued_items
from windowkeeper.analysis.shellwords import lines_of
from windowkeeper.summary.handoff import decide, fixes, plans, work

# The tokenizer as it was: each character of a word tried against every alternative.
_OLD_WORD = re.compile(
    r"""(&&|\|\||[;|](?!&)|&(?!>))"""
    r"""|((?:'[^']*'|"(?:\\.|[^"\\])*"|\\.|>&|&>|\|&|[^\s'"\\;|&])+)"""
)
_OLD_QUOTED = re.compile(r"""'([^']*)'|"((?:\\.|[^"\\])*)"|\\(.)""", re.DOTALL)


def _old_unquoted(word: str) -> str:
    def plain(match: re.Match[str]) -> str:
        if match.group(1) is not None:
            return match.group(1)
        if match.group(2) is not None:
            return re.sub(r"\\(.)", r"\1", match.group(2), flags=re.DOTALL)
        return match.group(3)

    return _OLD_QUOTED.sub(plain, word)


def _old_steps(line: str) -> tuple[tuple[str, ...], ...]:
    steps: list[list[str]] = [[]]
    for operator, word in _OLD_WORD.findall(line):
        if operator:
            steps.append([])
        elif word.startswith("#"):
            break
        else:
            steps[-1].append(_old_unquoted(word))
    return tuple(tuple(step) for step in steps if step)


# Shell-significant characters, whitespace of every kind ``\s`` and ``str.split`` know,
# and words that start comments, redirect or assign.
_SHELL = st.sampled_from([
    "a", "cd", "x.py", "#", "#c", "a#b", "'", '"', "\\", ";", "|", "&", "&&", "||", ">",
    ">&", "&>", "|&", ">>", "<", "2>&1", " ", "  ", "\t", "\x0b", "\x1c", "\x85", "\u00a0",
    "\u2003", "\u3000", "=", "X=1", "é", "\u0131", "'q r'", '"a \\" b"', '"\\\\x"', "\\ ",
])  # fmt: skip


@settings(max_examples=2_000, deadline=None)
@given(st.lists(_SHELL, max_size=30))
def test_steps_of_is_the_old_tokenizer(pieces: list[str]) -> None:
    line = "".join(pieces)
    assert shellwords.tokenized(line) == _old_steps(line)


def test_a_plain_line_is_its_words_up_to_a_comment() -> None:
    steps_of = shellwords.tokenized
    assert steps_of("cat  a.py\u3000b.py # done") == (("cat", "a.py", "b.py"),)
    assert steps_of("echo a>b > out.txt") == (("echo", "a>b", ">", "out.txt"),)
    assert steps_of("# only a comment") == ()
    assert steps_of("cd /r && ls") == (("cd", "/r"), ("ls",))  # not plain: the pattern


# The one-pass pattern (blanks consumed in front of each token, an unmatched character
# consumed alone, trailing blanks cut but for one after a backslash, possessive pieces,
# words tried before operators) on hostile text: quotes, escapes, heredoc openers,
# substitutions, comments, operators glued to words and to each other, Unicode blanks.
_PIECES = st.sampled_from([
    "a", "x.py", "-n", "2>&1", ">&", "&>", "|&", ">", ">>", "<", "&&", "||", ";", "|", "&",
    ";&", ";;", "'", '"', "\\", "\\\\", "\\ ", '\\"', "\\'", "'a b'", '"a b"', '"a\\"b"',
    "'a\"b'", "\"a'b\"", "$(cat f)", "`pwd`", "${X}", "#", " #c", "<<EOF", "<<-'E'", " ",
    "  ", "\t", "\u3000", "\x0b", "\x1c", "\r", "\n", "é", "ß", "世", "=", "cd /r",
    "python -c \"print('x')\"", "sed -n '1,2p' f", "grep -e \"a\\|b\" f", "echo \"$(ls)\"",
])  # fmt: skip
_LINES = st.one_of(
    st.lists(_PIECES, max_size=14).map("".join),
    st.text(alphabet=st.sampled_from(list(" \t\\'\";|&><#a\u3000é\n")), max_size=30),
    st.text(max_size=30),
)


@settings(max_examples=1500, deadline=None)
@given(_LINES)
def test_the_one_pass_tokenizer_on_hostile_lines(line: str) -> None:
    assert shellwords.tokenized(line) == _old_steps(line)


@given(_LINES)
def test_unquoted_fast_forms_equal_the_substitution(line: str) -> None:
    # every word the tokenizer can hand it, quotes and escapes still in (one kind of
    # quote and no backslash: dropped without the substitution)
    for word in (w for w, _ in shellwords._WORD.findall(line) if w):
        assert shellwords._unquoted(word) == _old_unquoted(word)


def test_cases_the_one_pass_tokenizer_must_get_right() -> None:
    cases = {
        "a \\ ": (("a", " "),),  # the blank after a backslash is escaped, not trailing
        "a\\\\ ": (("a\\",),),  # ... unless the backslash is itself escaped
        "ls ;& x": (("ls",), ("x",)),  # ``;&`` is no operator: ``;`` skipped alone
        'echo "it\'s" \'say "hi"\'': (("echo", "it's", 'say "hi"'),),
        "a|&b &>log c>&2": (("a|&b", "&>log", "c>&2"),),
        "x &&y||z;w|v & u": (("x",), ("y",), ("z",), ("w",), ("v",), ("u",)),
        "cat f # 'unclosed": (("cat", "f"),),
        "   ": (),
    }
    for line, expected in cases.items():
        assert shellwords.tokenized(line) == expected, line
        assert _old_steps(line) == expected, line


_STEP_SEPARATORS = re.compile(r"&&|\|\||;|\n")
"""The separators of steps as a regex (``shellwords._separated`` splits at the same)."""


def _old_segments(command: str) -> tuple[str, ...]:
    lines = lines_of(command)[0] if "<<" in command else [command]
    split = _STEP_SEPARATORS.split
    return tuple(
        shellwords._ENV_PREFIX.sub("", " ".join(part.split()))
        for line in lines
        for part in split(line)
        if part.strip()
    )


_STEPS = st.sampled_from([
    "X=1 ", "A_B=x y ", "=", "a=b", "python t.py", "PYTHONPATH=. pytest", " && ", ";", "\n",
    "||", " ", "cat <<EOF\nbody=1\nEOF\n", "1X=2 go", "django-admin test", "-m django test",
    "python -m  django\ttest", "django-admintest", "djangotest", "-m django testing", "é",
    "&", "|", "|||", "&&&", "&|", "|&", ";;",
])  # fmt: skip


@settings(max_examples=1_500, deadline=None)
@given(st.lists(_STEPS, max_size=25))
def test_segments_and_the_django_gate_are_the_patterns(pieces: list[str]) -> None:
    command = "".join(pieces)
    assert shellwords.split_segments(command) == _old_segments(command)
    # Wherever the django test pattern matches, its gate does.
    if checks._MORE_TESTS.search(command):
        assert checks._DJANGO_TEST.search(command)


@settings(max_examples=3_000, deadline=None)
@given(st.text(alphabet="&|;\n a\r", max_size=24) | st.text(max_size=24))
def test_steps_are_separated_where_the_pattern_splits(line: str) -> None:
    assert shellwords._separated(line) == _STEP_SEPARATORS.split(line)


@settings(max_examples=1_000, deadline=None)
@given(st.lists(st.sampled_from([">", "<", ">>", "2>&1", "&>x", "1>", "a", "x>y", "<<", "9"])))
def test_redirects_are_left_out_as_the_pattern_leaves_them(words: list[str]) -> None:
    expected = [t for t in words if not steps._REDIRECT.match(t)]
    assert steps.unredirected(words) == expected


# Pieces of prose: the clue words, near misses, and characters that case-insensitive
# matching equates with ASCII letters (dotless and dotted i, long s, the Kelvin sign).
_PROSE = st.sampled_from([
    "I've ", "I have ", "fixed", "FIXED", "F\u0130XED", "f\u0131xed", "implemented",
    "completed", "complete", "finished", "resolved", "added", "updated", "done", "is ",
    "are ", "has been ", "all the tests ", "now ", "pass", "pa\u017f\u017f", "works",
    "wor\u212as", "successfully ", " ", ".", "error", "ERROR", "fatal", "fail", "ignored",
    "denied", "not found", "cannot", "can't", "unable", "invalid", "refused", "conflict",
    "missing", "no such", "unknown", "exceed", "did not appear", "no replacement",
    "not performed", "x", "é", "\u0130", "\u0131",
])  # fmt: skip


@settings(max_examples=2_000, deadline=None)
@given(st.lists(st.lists(_PROSE, max_size=12).map("".join), max_size=6))
def test_the_clues_keep_every_text_the_patterns_match(texts: list[str]) -> None:
    texts = [t.replace("\n", " ") for t in texts]
    _assert_clues_keep(texts, work._CLAIM, work._CLAIM_CLUES)
    _assert_clues_keep(texts, fixes._TELLING, fixes._TELLING_CLUES)


def _assert_clues_keep(texts: list[str], pattern: re.Pattern[str], clues: Clues) -> None:
    """Of ``texts``, those ``pattern`` matches in are among those a clue is in."""
    matched = [t for t in texts if pattern.search(t)]
    assert [t for t in clued_items(texts, clues) if pattern.search(t)] == matched


_DECIDING = st.sampled_from([
    "We decided ", "instead of ", "Rather than ", "the fix is ", "The root cause ", "I'll use ",
    "we will switch ", "Let's keep ", "going with ", "opted ", "CHOSE ", "the bug lives ",
    "it turns out ", "so only ", "because ", "doesn't support ", "not supported ",
    "would fail ", "the reason was ", "workaround ", "I need to rewrite ", "is cleaner ",
    "looks simpler ", "would be more robust ", "seems safer ", "x ", "\u0130", "\u0131",
    "\u017f", "\u212a", "I", "we", "s", "o", "ly ", "fix ", ". ", "é ",
])  # fmt: skip


@settings(max_examples=2_000, deadline=None)
@given(st.lists(st.lists(_DECIDING, max_size=10).map("".join), max_size=5))
def test_the_decision_clues_keep_every_sentence_the_pattern_matches(texts: list[str]) -> None:
    _assert_clues_keep(texts, decide._DECISION, decide._DECISION_CLUES)


_REASONS = st.sampled_from([
    "instead of ", "rather than ", "Cleaner ", "simpler ", "SAFER ", "more robust ",
    "doesn't support ", "does not work ", "DON'T handle ", "do not allow ", "cannot alter ",
    "can't change ", "can not work ", "won't support ", "isn't handle ", "not supported ",
    "unsupported ", "will fail ", "would break ", "because ", "since the ", "since it ",
    "since we ", "since this ", "so that ", "the reason ", "otherwise ", "to avoid ",
    "in order to ", "due to ", "caused by ", "required ", "requires ", "x ", "\u0130",
    "\u0131", "\u017f", "\u212a", "n", "'", "t ", ". ", "é ",
])  # fmt: skip


@settings(max_examples=2_000, deadline=None)
@given(st.lists(st.lists(_REASONS, max_size=10).map("".join), max_size=5))
def test_the_reason_clues_keep_every_sentence_the_pattern_matches(texts: list[str]) -> None:
    _assert_clues_keep(texts, decide._WHY, decide._WHY_CLUES)


@settings(max_examples=1_500, deadline=None)
@given(
    st.lists(
        st.sampled_from(
            [
                "Next steps",
                "plan",
                "I'll add",
                "x",
                ":",
                " ",
                "\t",
                "*",
                "#",
                "\u3000",
                "\x85",
                "steps:",
                "TODO",
                "é",
            ]
        ),
        max_size=12,
    )
)
def test_a_plan_head_ends_in_a_colon(pieces: list[str]) -> None:
    head = "".join(pieces).strip().strip("*#")
    if plans._HEAD.search(head):
        assert head.rstrip().endswith(":")
