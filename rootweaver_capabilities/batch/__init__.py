"""``rootweaver batch``: a JSONL file of questions answered by local processes or a Ray actor pool.
"""
