"""The inbox: the local stack's receiver of Alertmanager's webhook notifications, one process.

Alertmanager posts every page and ticket (and their resolution) to `POST /alerts` here, as it would to a real
receiver (slo/alertmanager/alertmanager.yml; slo/README.md says how to route to email, Slack or PagerDuty
instead). Each notification is kept, as Alertmanager sent it with the time it arrived, one JSON line per
notification in `notifications.jsonl` of the stack's run folder; `GET /notifications` returns them, newest last,
and `./sanlens pages` lists them. A notification is written and flushed before Alertmanager gets its 200, so one
that was answered is never lost; one that was not is sent again by Alertmanager."""

from __future__ import annotations

import json
import sys
import threading
from datetime import UTC, datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

PATH = "/alerts"


def read(file: Path) -> list[dict]:
    """Every notification kept in `file`, oldest first."""
    if not file.exists():
        return []
    return [json.loads(line) for line in file.read_text().splitlines() if line.strip()]


def server(port: int, file: Path, host: str = "127.0.0.1") -> ThreadingHTTPServer:
    """The inbox on `host`:`port`, keeping what it receives in `file`; serve it with serve_forever()."""
    file.parent.mkdir(parents=True, exist_ok=True)
    lock = threading.Lock()

    class Inbox(BaseHTTPRequestHandler):
        def do_POST(self):
            if self.path != PATH:
                return self._answer(404, {"error": f"notifications go to {PATH}"})
            try:
                notification = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))))
            except ValueError as exc:
                return self._answer(400, {"error": f"not JSON: {exc}"})
            line = json.dumps({"received_at": datetime.now(UTC).isoformat(), "notification": notification})
            with lock, file.open("a") as out:
                out.write(line + "\n")
            return self._answer(200, {"kept": True})

        def do_GET(self):
            if self.path != "/notifications":
                return self._answer(404, {"error": "GET /notifications"})
            with lock:
                return self._answer(200, read(file))

        def _answer(self, status: int, body) -> None:
            data = json.dumps(body).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, *args):
            pass

    return ThreadingHTTPServer((host, port), Inbox)


def main() -> None:
    from ingest import settings

    port = settings.port("ALERT_WEBHOOK")
    inbox = server(port, settings.INBOX_FILE, settings.INBOX_HOST)
    print(f"inbox: http://{settings.INBOX_HOST}:{port}{PATH} -> {settings.INBOX_FILE}", flush=True)
    inbox.serve_forever()


if __name__ == "__main__":
    sys.exit(main())
