"""The files a folder corpus skips, reported on stderr (``ask --corpus FOLDER``, ``index build FOLDER``)."""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING

from rootweaver_capabilities.cli.safe_output import terminal_safe

if TYPE_CHECKING:
    from rootweaver_innovations.documents.folders import SkippedFile

__all__ = ["SkipReport"]


class SkipReport:
    """Prints each file a folder corpus skips (one stderr line naming it and the reason),
    then a summary counting them by reason."""

    def __init__(self) -> None:
        self.skipped: list[SkippedFile] = []

    def __call__(self, skipped: SkippedFile) -> None:
        self.skipped.append(skipped)
        print(f"rootweaver: skipped {terminal_safe(skipped.path, one_line=True)}: "
              f"{terminal_safe(skipped.reason, one_line=True)}", file=sys.stderr)

    def summary(self, what: str) -> None:
        from rootweaver_innovations.documents.folders import count_by_reason

        counts = ", ".join(f"{n} {terminal_safe(reason, one_line=True)}"
                           for reason, n in count_by_reason(self.skipped).items())
        print(f"rootweaver: {terminal_safe(what, one_line=True)}; skipped {len(self.skipped)} file(s): {counts}",
              file=sys.stderr)
