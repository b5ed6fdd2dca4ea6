"""The shell tokenizer's one-pass pattern (issue 27): whitespace consumed in front of each
token, possessive pieces, a word tried before an operator, an unmatched character consumed
as an empty pair, trailing blanks cut, and quotes dropped without a substitution when a
word has one kind and no backslash. It gives the steps the previous tokenizer gave for any
line; the previous one is kept here as the reference."""

from __future__ import annotations

import re

from hypothesis import given, settings
from hypothesis import strategies as st

from windowkeeper.analysis import shellwords
from windowkeeper.analysis.shellwords import tokenized

_OLD_WORD = re.compile(
    r"""(&&|\|\||[;|](?!&)|&(?!>))"""
    r"""|((?:[^\s'"\\;|&>]+|'[^']*'|"(?:\\.|[^"\\])*"|\\.|>&|&>|\|&|[^\s'"\\;|&])+)"""
)
_OLD_QUOTED = re.compile(r"""'([^']*)'|"((?:\\.|[^"\\])*)"|\\(.)""", re.DOTALL)
_OLD_ESCAPE = re.compile(r"\\(.)", re.DOTALL)


def _old_unquoted(word: str) -> str:
    if "'" not in word and '"' not in word and "\\" not in word:
        return word

    def plain(match: re.Match[str]) -> str:
        if match.group(1) is not None:
            return match.group(1)
        inner = match.group(2)
        if inner is not None:
            return _OLD_ESCAPE.sub(r"\1", inner) if "\\" in inner else inner
        return match.group(3)

    return _OLD_QUOTED.sub(plain, word)


def _old_tokenized(line: str) -> shellwords.Steps:
    steps: list[list[str]] = [[]]
    for operator, word in _OLD_WORD.findall(line):
        if operator:
            steps.append([])
        elif word.startswith("#"):
            break
        else:
            steps[-1].append(_old_unquoted(word))
    return tuple(tuple(step) for step in steps if step)


# Quotes, escapes, heredoc openers, operators glued to words and to each other,
# substitutions, comments, Unicode blanks and letters, blanks at the end.
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
def test_tokenized_equals_the_previous_tokenizer(line: str) -> None:
    assert tokenized(line) == _old_tokenized(line)


@given(_LINES)
def test_unquoted_equals_the_previous_substitution(line: str) -> None:
    # every word the tokenizer can hand it, quotes and escapes still in
    for word in (w for w, _ in shellwords._WORD.findall(line) if w):
        assert shellwords._unquoted(word) == _old_unquoted(word)


def test_cases_the_fast_forms_must_get_right() -> None:
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
    for line, steps in cases.items():
        assert tokenized(line) == steps, line
        assert _old_tokenized(line) == steps, line
