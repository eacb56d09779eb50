"""Documents in: JSONL rows, folders of files (Markdown, text, HTML, PDF) cut into chunks by the
reader's tokenizer, the bundled demo corpus. File reading only; no retrieval, no model.

May import: compaction (the tokenizer of budgets), conventions, defaults, text.
"""
