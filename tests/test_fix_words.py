"""A fix quotes what the agent found between the failure and the fix (summary/handoff/
fixes.py): the reason a reader asked "why was it done this way?" needs."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from test_handoff import bash, say, state_of, user
from windowkeeper.summary.handoff.fixes import WORDS_CHARS

IGNORED = (
    "The following paths are ignored by one of your .gitignore files:\npriv/static/assets\n"
    "<returncode>1</returncode>"
)


def _force_add(*words: str) -> tuple[str, ...]:
    turns = [user("Commit the stylesheet.")]
    turns += bash("a1", "git add priv/static/assets/app.css", IGNORED)
    turns += [say(w) for w in words]
    turns += bash("a2", "git add -f priv/static/assets/app.css", "<returncode>0</returncode>")
    return state_of(turns).work.fixed


def test_the_agents_findings_before_a_fix_are_quoted_with_it() -> None:
    (entry,) = _force_add(
        "The assets directory is gitignored because it holds build output. Let me check how "
        "the CSS is tracked.",
        "`vendor.css` in priv/static/assets was force-added, so it is tracked. I should do "
        "the same for app.css.",
    )
    # The plan ("I should …") is left out: what the fix did is named by the fix itself.
    assert entry.endswith(
        "then ok; the agent's words before it: \"The assets directory is gitignored because "
        "it holds build output. `vendor.css` in priv/static/assets was force-added, so it is "
        'tracked."'
    )


def test_announcements_apologies_and_other_matters_are_not_quoted() -> None:
    (entry,) = _force_add(
        "I apologize for the error.",
        "Let me look at the assets directory.",
        "The ORDER BY clause always carries a direction in this query builder.",
    )
    # The only statement left names nothing of the failure or the fix.
    assert "the agent's words" not in entry
    assert entry.endswith("`git add -f priv/static/assets/app.css` then ok")


def test_an_installed_module_needs_no_words() -> None:
    turns = [
        user("Run the script."),
        *bash("r1", "python t.py", "ModuleNotFoundError: No module named 'pytz'\n"
              "<returncode>1</returncode>"),
        say("The script t.py needs pytz, which this environment lacks."),
        *bash("i1", "pip install pytz", "<returncode>0</returncode>"),
        *bash("r2", "python t.py", "<returncode>0</returncode>"),
    ]  # fmt: skip
    (entry,) = state_of(turns).work.fixed
    assert entry.endswith("→ installed: `pip install pytz` ok")


@settings(max_examples=60, deadline=None)
@given(st.lists(st.text(min_size=0, max_size=400), max_size=6))
def test_the_quote_is_bounded_and_names_the_fix(words: list[str]) -> None:
    (entry,) = _force_add(*words)
    fix, marker, quoted = entry.partition("; the agent's words before it: ")
    assert fix.endswith("`git add -f priv/static/assets/app.css` then ok")
    if marker:
        assert quoted.startswith('"') and quoted.endswith('"')
        assert len(quoted) <= WORDS_CHARS + 2
        assert '"' not in quoted[1:-1]
