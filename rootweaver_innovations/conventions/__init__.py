"""Corpus and language conventions, by name: the rules text alone does not settle.

Owns the :class:`~.base.Conventions` protocol, its registry (:mod:`.registry`) and the built-in
members: ``wikipedia`` (English encyclopedia pages: lead subjects, nicknames, comparison
question templates, the date rule's lead dates) and ``plain`` (only what any document gives).
Outside this package no product code names an English name list or a question template.
May import the leaf modules (``text``, ``records``, ``registry``, ``defaults``, ``fingerprint``);
only ``wikipedia.dates`` (an answer rule) imports the loop.
"""
