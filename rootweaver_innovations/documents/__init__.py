"""Documents in: JSONL rows, folders of files (Markdown, text, HTML, PDF) cut into chunks, the
bundled demo corpus. Pure file reading; no retrieval, no model.
"""
