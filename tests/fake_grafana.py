"""What Grafana's HTTP API answers to grafana/start.sh, so that its organisations can be made without a Grafana (none
is obtainable on the development machine): GET /api/health, GET /api/orgs/ID, POST /api/orgs, behind the server
admin's Basic auth (GF_SECURITY_ADMIN_PASSWORD), Grafana's answers compact JSON with sorted keys as Go's encoder
writes them. The organisations live in a JSON file ({id: name}), which the test reads and sets.

python tests/fake_grafana.py PORT ORGANISATIONS_JSON"""

from __future__ import annotations

import base64
import json
import os
import re
import sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path


class Grafana(BaseHTTPRequestHandler):
    organisations: Path

    def log_message(self, fmt, *args):
        pass

    def _reply(self, status: int, body: dict) -> None:
        data = json.dumps(body, sort_keys=True, separators=(",", ":")).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _admin(self) -> bool:
        expected = "admin:" + os.environ["GF_SECURITY_ADMIN_PASSWORD"]
        return self.headers.get("Authorization") == "Basic " + base64.b64encode(expected.encode()).decode()

    def _orgs(self) -> dict[int, str]:
        return {int(k): v for k, v in json.loads(self.organisations.read_text()).items()}

    def do_GET(self):
        if self.path == "/api/health":
            return self._reply(200, {"database": "ok"})
        if not self._admin():
            return self._reply(401, {"message": "Unauthorized"})
        found = re.fullmatch(r"/api/orgs/(\d+)", self.path)
        orgs = self._orgs()
        if found and int(found.group(1)) in orgs:
            return self._reply(200, {"id": int(found.group(1)), "name": orgs[int(found.group(1))]})
        return self._reply(404, {"message": "Organization not found"})

    def do_POST(self):
        if not self._admin():
            return self._reply(401, {"message": "Unauthorized"})
        name = json.loads(self.rfile.read(int(self.headers["Content-Length"])))["name"]
        orgs = self._orgs()
        if self.path != "/api/orgs" or name in orgs.values():
            return self._reply(409, {"message": "Organization name taken"})
        org_id = max(orgs) + 1
        self.organisations.write_text(json.dumps({**orgs, org_id: name}))
        return self._reply(200, {"message": "Organization created", "orgId": org_id})


if __name__ == "__main__":
    Grafana.organisations = Path(sys.argv[2])
    ThreadingHTTPServer(("127.0.0.1", int(sys.argv[1])), Grafana).serve_forever()
