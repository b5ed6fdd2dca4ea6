"""The handoff's content (v2): a structured state, extracted mechanically from the
summarized turns, merged with the previous handoff, and rendered within a budget.

:mod:`.model` holds the state, :mod:`.extract` and :mod:`.work` fill it from an
:class:`~windowkeeper.analysis.events.Analysis`, :mod:`.text` renders it and reads it
back, :mod:`.fit` keeps it within its token budget.
"""
