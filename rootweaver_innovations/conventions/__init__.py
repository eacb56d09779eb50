"""Corpus and language conventions, by name: the rules text alone does not settle.

Owns the :class:`~.base.Conventions` protocol, its registry (:mod:`.registry`) and the built-in
members: ``wikipedia`` (English encyclopedia pages: lead subjects, nicknames, comparison
question templates, the date rule's lead dates) and ``plain`` (only what any document gives).
Outside this package no product code names an English name list or a question template.
Only the ``date_comparison`` answer rule (``wikipedia/dates.py``) reads the loop's records.

May import: defaults, fingerprint, loop, records, registry, retrieval, text.
"""
