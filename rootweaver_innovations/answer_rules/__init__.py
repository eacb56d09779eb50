"""Answers computed without a reader: the answer-rule registry (``answer_rules: [...]``) and the
extractive answer used when no reader model is configured. The rules themselves may live with
the conventions whose text they read (``date_comparison``: ``conventions/wikipedia/dates.py``).

May import: compaction, conventions, loop, records, registry, text.
"""
