"""Patches in the handoff's Files section: the files a diff changes, whether it was
written in the same command or to a file applied later, and what patch's output says."""

from __future__ import annotations

from test_trail import files, rounds, trail


def test_a_patch_applied_from_a_file_names_its_files_in_the_output() -> None:
    partial = ("<returncode>1</returncode>\n<output>\npatching file django/db/schema.py\n"
               "Hunk #1 FAILED at 1.\nHunk #2 succeeded at 517 with fuzz 2.\n"
               "1 out of 3 hunks FAILED -- saving rejects to file django/db/schema.py.rej\n"
               "patching file 'docs/a b.txt'\npatching file setup.cfg\nHunk #1 FAILED at 3.\n"
               "1 out of 1 hunk FAILED -- saving rejects to file setup.cfg.rej\n"
               "</output>")  # fmt: skip
    turns = rounds(
        ("p1", "bash", {"command": "cd /testbed && patch -p1 < final_fix.patch"}, partial),
        ("p2", "bash", {"command": "git apply -v ../fix.diff"},
         "Checking patch src/app.py...\nApplied patch src/app.py cleanly.\n"),
        ("p3", "bash", {"command": "patch --dry-run -p1 -i fix.patch"},
         "checking file src/dry.py\n"),
    )  # fmt: skip
    modified = files(trail(turns), "modified")
    # setup.cfg: every hunk failed, the file is unchanged; a dry run changes nothing.
    # (the later commands run in /testbed, where the first one went)
    assert modified == (
        "/testbed/django/db/schema.py", "/testbed/docs/a b.txt", "/testbed/src/app.py"
    )  # fmt: skip


def test_a_diff_written_to_a_file_names_its_files_when_git_apply_applies_it() -> None:
    diff = ("--- a/src/app.py\n+++ b/src/app.py\n@@ -1 +1 @@\n-x\n+y\n"
            "--- /dev/null\n+++ b/docs/new file.md\t2024-01-01\n@@ -0,0 +1 @@\n+z\n")  # fmt: skip
    turns = rounds(
        ("w1", "bash", {"command": f"cd /repo && cat > /tmp/fix.patch <<'EOF'\n{diff}EOF"}, ""),
        ("w2", "Write", {"file_path": "/repo/two.diff", "content": diff.replace("app", "lib")},
         "ok"),
        ("c1", "bash", {"command": "git apply --check /tmp/fix.patch"}, ""),
        ("a0", "bash", {"command": "git apply /tmp/unknown.patch"}, ""),
    )  # fmt: skip
    assert "/repo/src/app.py" not in files(trail(turns), "modified")  # only checked
    turns += rounds(
        ("a1", "bash", {"command": "git apply -p1 /tmp/fix.patch"}, ""),
        ("a2", "bash", {"command": "patch -p1 -i two.diff > /dev/null"}, ""),
    )
    modified = files(trail(turns), "modified")
    assert modified == (
        "/tmp/fix.patch", "/repo/src/app.py", "/repo/docs/new file.md", "/repo/src/lib.py"
    )  # fmt: skip
