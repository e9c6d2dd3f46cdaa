"""The arrays' and switches' REST endpoints on loopback, for Telegraf's inputs.http to poll:

GET /arrays/{array}/api/v1/systemreporter/attime/{vlunstatistics|vvhistograms|vvtiers}/hires
GET /switches/{switch}/rest/running/brocade-interface/fibrechannel-statistics
GET /                                      the index: every endpoint served

A scenario's api_fault events make an array's or switch's answers wrong for a while: an HTTP 500, truncated JSON,
or a missing volume (the document's first member left out; a switch's first port).
"""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from ingest.telegraf import pollers

from . import formats
from .fleet import Fleet
from .truth import Truth


class Endpoints:
    def __init__(self, fleet: Fleet, truth: Truth, lock: threading.Lock, port: int):
        self.fleet, self.truth, self.lock = fleet, truth, lock
        handler = type("Handler", (_Handler,), {"endpoints": self})
        self.server = ThreadingHTTPServer(("127.0.0.1", port), handler)
        self.port = self.server.server_address[1]
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> Endpoints:
        self.thread.start()
        return self

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()

    def document(self, path: str) -> tuple[dict | None, str | None]:
        """The document served at `path` (None: no such endpoint), and the fault an api_fault event of the scenario
        puts on the answer now: http_500 (an error instead), truncated (its first half), or None; missing_volume
        leaves the document's first member out. The truth counts the members Telegraf can make metrics of."""
        parts = path.strip("/").split("/", 2)
        with self.lock:
            if path.strip("/") == "":
                return {"arrays": sorted(self.fleet.s.arrays), "switches": sorted(self.fleet.s.switches)}, None
            if len(parts) == 3 and parts[0] == "arrays" and parts[1] in self.fleet.s.arrays:
                doc, fault = formats.array_document(self.fleet, parts[1], parts[2]), self.fleet.api_fault(parts[1])
                if doc and fault == "missing_volume" and "members" in doc:
                    doc["members"], doc["total"] = doc["members"][1:], doc["total"] - 1
                if doc and fault in (None, "missing_volume"):
                    self.truth.count(pollers.ARRAY_APIS[parts[2]][0], len(pollers.metric_objects(parts[2], doc)))
                return doc, fault
            if (
                len(parts) == 3
                and parts[0] == "switches"
                and parts[1] in self.fleet.s.switches
                and parts[2] == pollers.SWITCH_API
            ):
                doc, fault = formats.fc_statistics(self.fleet, parts[1]), self.fleet.api_fault(parts[1])
                ports = doc["Response"]["fibrechannel-statistics"]
                if fault == "missing_volume":  # a switch's answer without its first port
                    ports[:] = ports[1:]
                if fault in (None, "missing_volume"):
                    self.truth.count(pollers.SWITCH_MEASUREMENT, len(ports))
                return doc, fault
        return None, None


class _Handler(BaseHTTPRequestHandler):
    endpoints: Endpoints

    def do_GET(self):  # noqa: N802 (http.server's naming)
        doc, fault = self.endpoints.document(self.path.split("?", 1)[0])
        body = json.dumps(doc if doc is not None else {"error": f"no such endpoint: {self.path}"}).encode()
        status = 200 if doc is not None else 404
        if fault == "http_500":
            status, body = 500, b'{"error": "internal server error"}'
        elif fault == "truncated":
            body = body[: len(body) // 2]
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass
