"""The reply of the tests' small HTTP servers (admin, bookie): a JSON body, or 404 when there is none."""

from __future__ import annotations

import json
from http.server import BaseHTTPRequestHandler


def reply_json(handler: BaseHTTPRequestHandler, body: object | None) -> None:
    if body is None:
        handler.send_response(404)
        handler.end_headers()
        return
    data = json.dumps(body).encode()
    handler.send_response(200)
    handler.send_header("Content-Type", "application/json")
    handler.send_header("Content-Length", str(len(data)))
    handler.end_headers()
    handler.wfile.write(data)
