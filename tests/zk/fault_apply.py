"""Test-only: `python -m tests.zk.fault_apply N ARGS...` runs `pulsar-ops ARGS...` and SIGKILLs itself right
after the Nth committed delete transaction, before it is journaled (the worst moment for a crash).

The hook is injected here, by wrapping the executor's delete run; production code has no fault switch.
"""

from __future__ import annotations

import os
import signal
import sys
from typing import Any

from pulsar_ops.repair import apply_run


def main() -> None:
    limit = int(sys.argv[1])
    real = apply_run.run_delete
    commits = [0]

    def after_commit() -> None:
        commits[0] += 1
        if commits[0] >= limit:
            os.kill(os.getpid(), signal.SIGKILL)

    def run_delete(*args: Any, **kwargs: Any) -> Any:
        kwargs["after_commit"] = after_commit
        return real(*args, **kwargs)

    apply_run.run_delete = run_delete  # type: ignore[assignment]
    from pulsar_ops.cli.main import main as cli_main

    sys.argv = ["pulsar-ops", *sys.argv[2:]]
    cli_main()


if __name__ == "__main__":
    main()
