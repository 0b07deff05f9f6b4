"""A decode worker process's entry point: ``python -m pulsar_ops.scrape.decode_worker`` (see ``decode_pool``).

It refuses pandas and numpy *before* importing anything that imports pyarrow: pyarrow imports numpy when it is
itself imported (optional since pyarrow 16) and pandas the first time it converts Python objects (``pa.array``:
is this a pandas object?). A worker converts only Python objects and writes Parquet, so it never uses either;
refused, pyarrow takes them as absent. Measured on this project's 2-core machine: the worker's imports and a first
Parquet write take 0.7-0.8 CPU-s and 128 MB with numpy, 0.3-0.4 CPU-s and 73 MB without; pandas cost another
~0.1-0.4 CPU-s and ~50 MB. Only this process refuses them, never the scrape's own.
"""

from __future__ import annotations

import sys

REFUSED = ("pandas", "numpy")  # top-level packages a decode worker does not import


class Refused:
    """A meta-path finder: importing a package of ``REFUSED`` raises ModuleNotFoundError (pyarrow's "absent")."""

    @staticmethod
    def find_spec(name: str, path: object = None, target: object = None) -> None:
        if name.partition(".")[0] in REFUSED:
            raise ModuleNotFoundError(f"a decode worker does not use {name}", name=name)
        return None


def main() -> int:
    sys.meta_path.insert(0, Refused)
    from pulsar_ops.scrape.decode_pool import worker_main  # pyarrow comes in here, numpy refused

    return worker_main(sys.stdin.buffer, sys.stdout.buffer)


if __name__ == "__main__":
    raise SystemExit(main())
