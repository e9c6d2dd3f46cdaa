"""./sanlens pages: the pages and tickets Alertmanager sent to the local stack's inbox (slo/inbox.py), one row per
alert of each notification, oldest first, as the receiver got them."""

from __future__ import annotations

from sanlensctl import config
from slo import inbox

COLUMNS = ["received", "receiver", "status", "severity", "slo", "entity", "since", "cause"]


def rows(limit: int) -> list[list[str]]:
    """The last `limit` alerts the inbox received."""
    out = []
    for kept in inbox.read(config.INBOX_FILE):
        notification = kept["notification"]
        for alert in notification.get("alerts", []):
            labels, notes = alert.get("labels", {}), alert.get("annotations", {})
            out.append(
                [
                    kept["received_at"][:19].replace("T", " "),
                    notification.get("receiver", ""),
                    alert.get("status", ""),
                    labels.get("severity", ""),
                    labels.get("slo", ""),
                    labels.get("entity", ""),
                    alert.get("startsAt", "")[:19].replace("T", " "),
                    notes.get("cause", ""),
                ]
            )
    return out[-limit:]
