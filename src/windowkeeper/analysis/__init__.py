"""Layer 2, analysis: what each message is and what it says, read once.

What kind a message is (real user turn, handoff, restated task), what a tool call did
(shell, read, edit ...), exit codes, error lines, identifiers, files touched. Every later
stage reads these facts instead of re-deriving them.
"""
