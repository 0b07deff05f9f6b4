"""Safe, bounded reads of a bookie's files: regular files only, throttled, leaving the page cache as it was.

- ``open_regular``: ``O_RDONLY | O_NONBLOCK | O_NOFOLLOW`` (``O_NOATIME`` when permitted), then ``fstat`` on the
  open descriptor: anything but a regular file (a FIFO, a device, a directory, a socket; a symlink is refused by
  ``O_NOFOLLOW`` with ``ELOOP``) raises ``NotRegular`` before a byte is read. ``O_NONBLOCK`` keeps the open of a
  FIFO from blocking. Readahead is turned off on the descriptor (``POSIX_FADV_RANDOM``): the only pages the scan
  brings into the cache are those it reads.
- ``PageCache.resident``: which pages of a range are in the page cache, by ``mincore(2)`` on a ``PROT_READ``
  mapping of the range (mapping does not fault pages in).
- ``Reader.pread``: notes the residency of the range, reads it, throttles, then ``posix_fadvise(DONTNEED)`` on
  the runs of pages that were NOT resident before: pages the bookie had cached stay cached, pages the scan
  brought in are released. When residency cannot be known (no ``mincore``), nothing is dropped.
"""

from __future__ import annotations

import contextlib
import ctypes
import ctypes.util
import errno
import os
import stat
from collections.abc import Callable, Iterator
from pathlib import Path

import numpy as np
import numpy.typing as npt

Throttle = Callable[[int], None]
PAGE = os.sysconf("SC_PAGE_SIZE") if hasattr(os, "sysconf") else 4096
SMALL_FILE_MAX = 4096  # bounded read of small text files (lastId)


class NotRegular(OSError):
    """The name is not a regular file; ``kind`` is fifo | directory | symlink | socket | char-device | ..."""

    def __init__(self, kind: str) -> None:
        super().__init__(errno.EINVAL, f"not a regular file: {kind}")
        self.kind = kind


def file_kind(mode: int) -> str:
    if stat.S_ISREG(mode):
        return "regular"
    if stat.S_ISDIR(mode):
        return "directory"
    if stat.S_ISLNK(mode):
        return "symlink"
    if stat.S_ISFIFO(mode):
        return "fifo"
    if stat.S_ISSOCK(mode):
        return "socket"
    if stat.S_ISCHR(mode):
        return "char-device"
    if stat.S_ISBLK(mode):
        return "block-device"
    return "other"


def open_regular(path: Path | str, *, nofollow: bool = True) -> tuple[int, os.stat_result]:
    """Open ``path`` read-only and return (fd, fstat); NotRegular when it is not a regular file."""
    flags = os.O_RDONLY | getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_NONBLOCK", 0)
    if nofollow:
        flags |= getattr(os, "O_NOFOLLOW", 0)
    noatime = getattr(os, "O_NOATIME", 0)
    try:
        fd = -1
        if noatime:
            with contextlib.suppress(PermissionError):  # O_NOATIME needs the file's owner or CAP_FOWNER
                fd = os.open(path, flags | noatime)
        if fd < 0:
            fd = os.open(path, flags)
    except OSError as e:
        if e.errno == errno.ELOOP and nofollow:
            raise NotRegular("symlink") from e
        raise
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise NotRegular(file_kind(st.st_mode))
        with contextlib.suppress(OSError, AttributeError):
            os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_RANDOM)
    except BaseException:
        os.close(fd)
        raise
    return fd, st


def read_small(path: Path | str, limit: int = SMALL_FILE_MAX) -> bytes:
    """At most ``limit`` bytes of a regular file (``open_regular``): a FIFO or ``/dev/zero`` cannot hang it."""
    fd, _ = open_regular(path)
    try:
        return os.pread(fd, limit, 0)
    finally:
        os.close(fd)


class PageCache:
    """Page-cache residency via ``mincore`` (Linux, glibc/musl through ctypes)."""

    def __init__(self) -> None:
        self.ok = False
        try:
            libc = ctypes.CDLL(ctypes.util.find_library("c") or None, use_errno=True)
            self._mmap = libc.mmap
            self._mmap.restype = ctypes.c_void_p
            self._mmap.argtypes = [
                ctypes.c_void_p,
                ctypes.c_size_t,
                ctypes.c_int,
                ctypes.c_int,
                ctypes.c_int,
                ctypes.c_longlong,
            ]
            self._munmap = libc.munmap
            self._munmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t]
            self._mincore = libc.mincore
            self._mincore.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_void_p]
            self.ok = True
        except (OSError, AttributeError):
            self.ok = False

    def resident(self, fd: int, offset: int, length: int) -> npt.NDArray[np.bool_] | None:
        """One bool per page of ``[offset, offset + length)`` (from the page holding ``offset``); None if unknown."""
        if not self.ok or length <= 0:
            return None
        with self.mapped(fd, offset, length) as m:
            return m.resident(offset, length) if m is not None else None

    @contextlib.contextmanager
    def mapped(self, fd: int, offset: int, length: int) -> Iterator[FileMapping | None]:
        """A ``PROT_READ`` mapping of ``[offset, offset + length)`` for ``mincore`` (one per file: a mapping costs
        two system calls, a residency query one); None when it cannot be made."""
        if not self.ok or length <= 0:
            yield None
            return
        start = offset - offset % PAGE
        span = offset + length - start
        addr = self._mmap(None, span, 1, 1, fd, start)  # PROT_READ, MAP_SHARED
        if addr is None or addr == ctypes.c_void_p(-1).value:
            yield None
            return
        try:
            yield FileMapping(self, addr, start, span)
        finally:
            self._munmap(addr, span)


class FileMapping:
    def __init__(self, cache: PageCache, addr: int, start: int, span: int) -> None:
        self.cache = cache
        self.addr = addr
        self.start = start
        self.span = span

    def resident(self, offset: int, length: int) -> npt.NDArray[np.bool_] | None:
        lo = offset - offset % PAGE
        hi = min(offset + length, self.start + self.span)
        if lo < self.start or hi <= lo:
            return None
        pages = (hi - lo + PAGE - 1) // PAGE
        vec = (ctypes.c_ubyte * pages)()
        if self.cache._mincore(self.addr + (lo - self.start), hi - lo, vec) != 0:
            return None
        flags: npt.NDArray[np.uint8] = np.frombuffer(memoryview(vec).cast("B"), dtype=np.uint8)
        return (flags & 1).astype(np.bool_)


_CACHE: PageCache | None = None


def page_cache() -> PageCache:
    global _CACHE
    if _CACHE is None:
        _CACHE = PageCache()
    return _CACHE


def release_new_pages(fd: int, offset: int, before: npt.NDArray[np.bool_] | None) -> int:
    """``DONTNEED`` on the runs of pages that were not resident before; returns the pages released."""
    if before is None or before.shape[0] == 0 or bool(before.all()):
        return 0
    start = offset - offset % PAGE
    new = ~before
    edges = np.flatnonzero(np.diff(np.concatenate(([0], new.view(np.int8), [0]))))
    runs = edges.reshape(-1, 2)
    with contextlib.suppress(OSError, AttributeError):
        for lo, hi in runs.tolist():
            os.posix_fadvise(fd, start + lo * PAGE, (hi - lo) * PAGE, os.POSIX_FADV_DONTNEED)
    return int(new.sum())


class Reader:
    """``pread`` on one open log: throttled, counted, leaving the page cache as it found it."""

    def __init__(
        self,
        fd: int,
        throttle: Throttle | None = None,
        cache: PageCache | None = None,
        mapping: FileMapping | None = None,
    ) -> None:
        self.fd = fd
        self.throttle = throttle
        self.cache = cache
        self.mapping = mapping  # a mapping of the whole file: residency without a mapping per read
        self.bytes_read = 0
        self.pages_released = 0

    def pread(self, n: int, offset: int) -> bytes:
        """Up to ``n`` bytes at ``offset`` (short only at the end of the file)."""
        if n <= 0:
            return b""
        if self.mapping is not None:
            before = self.mapping.resident(offset, n)
        else:
            before = self.cache.resident(self.fd, offset, n) if self.cache is not None else None
        out = os.pread(self.fd, n, offset)
        if 0 < len(out) < n:
            parts = [out]
            got = len(out)
            while got < n:
                more = os.pread(self.fd, n - got, offset + got)
                if not more:
                    break
                parts.append(more)
                got += len(more)
            out = b"".join(parts)
        self.bytes_read += len(out)
        if self.throttle is not None and out:
            self.throttle(len(out))
        if before is not None and out:
            pages = (offset % PAGE + len(out) + PAGE - 1) // PAGE
            self.pages_released += release_new_pages(self.fd, offset, before[:pages])
        return out
