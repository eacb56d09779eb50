"""Answers computed without a reader: the answer-rule registry, the date comparison rule and
the extractive fallback used when no reader model is configured. May import the loop.
"""
