"""The ``rootweaver`` command line (:func:`.main.main`): one module per command (``ask``, ``batch``,
``serve``, ``mcp``, ``index``), the argument types, safe printing and the interrupt handling long
commands share. Exit codes: 0 success, 1 a failed eval check, 2 bad input.
"""
