"""Bookie HTTP admin API scraper: bookie ids, read-only state and disk space (for the GC model).

Calls: `GET /api/v1/bookie/list_bookies?type=rw|ro` on one bookie (cluster view), then
`GET /api/v1/bookie/info` on each bookie's HTTP port (`{"freeSpace", "totalSpace"}`). A bookie that does not
answer keeps its row with unknown space and makes the scrape incomplete.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

import httpx

from pulsar_ops.errors import HttpError
from pulsar_ops.scrape.http import get_json


@dataclass(frozen=True)
class BookieRow:
    bookie_id: str
    readonly: bool
    free_bytes: int | None
    total_bytes: int | None


@dataclass(frozen=True)
class BookieScrape:
    bookies: tuple[BookieRow, ...]
    complete: bool
    errors: tuple[HttpError, ...]


def _ids(doc: Any, what: str) -> list[str]:
    if not isinstance(doc, dict):
        raise HttpError(f"list_bookies ({what}) did not return a JSON object", code="http-bad-shape")
    return sorted(str(k) for k in doc)


def bookie_http_url(bookie_id: str, scheme: str, http_port: int) -> str:
    host = bookie_id.rsplit(":", 1)[0] if ":" in bookie_id else bookie_id
    return f"{scheme}://{host}:{http_port}"


def parse_info(doc: Any, bookie_id: str) -> tuple[int, int]:
    if not isinstance(doc, dict) or "freeSpace" not in doc or "totalSpace" not in doc:
        raise HttpError(f"/api/v1/bookie/info of {bookie_id} lacks freeSpace/totalSpace", code="http-bad-shape")
    return int(doc["freeSpace"]), int(doc["totalSpace"])


def scrape_bookies(
    bookie_url: str,
    client_for: Callable[[str], httpx.Client],
    *,
    http_port: int | None = None,
) -> BookieScrape:
    parts = urlsplit(bookie_url)
    scheme = parts.scheme or "http"
    port = http_port or parts.port or 8000
    with client_for(bookie_url) as c:
        rw = _ids(get_json(c, "/api/v1/bookie/list_bookies", params={"type": "rw"}), "rw")
        ro = _ids(get_json(c, "/api/v1/bookie/list_bookies", params={"type": "ro"}), "ro")
    rows: list[BookieRow] = []
    errors: list[HttpError] = []
    for bookie_id, readonly in [(b, False) for b in rw] + [(b, True) for b in ro if b not in rw]:
        free: int | None = None
        total: int | None = None
        try:
            with client_for(bookie_http_url(bookie_id, scheme, port)) as bc:
                free, total = parse_info(get_json(bc, "/api/v1/bookie/info"), bookie_id)
        except HttpError as e:
            errors.append(e)
        rows.append(BookieRow(bookie_id, readonly, free, total))
    return BookieScrape(tuple(rows), complete=not errors, errors=tuple(errors))
