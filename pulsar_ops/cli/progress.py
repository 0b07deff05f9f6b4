"""A progress line on stderr for long commands (scrape, scan-bookie): a live status on a terminal, a printed line
every few seconds otherwise (a log file or a pod's output), nothing with ``--quiet``."""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from typing import Generic, TypeVar

from pulsar_ops.cli.common import err_console

P = TypeVar("P")


class ProgressLine(Generic[P]):
    """Call it with each progress value; ``render`` turns one into the line shown. ``stop()`` ends the status."""

    def __init__(self, enabled: bool, status: str, render: Callable[[P], str]) -> None:
        self.enabled = enabled
        self.tty = sys.stderr.isatty()
        self._render = render
        self._last = 0.0
        self._status = err_console.status(status) if enabled and self.tty else None
        if self._status is not None:
            self._status.start()

    def __call__(self, p: P) -> None:
        if not self.enabled:
            return
        now = time.monotonic()
        if now - self._last < (0.2 if self.tty else 10.0):
            return
        self._last = now
        text = self._render(p)
        if self._status is not None:
            self._status.update(text)
        else:
            err_console.print(text)

    def stop(self) -> None:
        if self._status is not None:
            self._status.stop()
