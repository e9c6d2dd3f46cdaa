"""A small built-in feed: SQL Server hosts' disk counters in Telegraf line protocol, named exactly as
Telegraf's win_perf_counters plugin names them (measurement win_disk, field Avg._Disk_sec/Read, ...).

The fleet simulator (scenarios, arrays, switches, topology) builds on this; until then `./sanlens demo`
plays this feed into Telegraf's socket listener.
"""
from __future__ import annotations

import random
import socket
import time


def escape_field_key(key: str) -> str:
    return key.replace(" ", "\\ ").replace(",", "\\,").replace("=", "\\=")


def host_lines(host: str, ts_ns: int, rng: random.Random) -> list[str]:
    """One sample of LogicalDisk counters for a host's data (D:) and log (L:) volumes."""
    out = []
    for disk, read_ms, write_ms in (("D:", 0.8, 0.5), ("L:", 0.3, 0.25)):
        fields = {
            "Avg._Disk_sec/Read": rng.lognormvariate(0, 0.25) * read_ms / 1000,
            "Avg._Disk_sec/Write": rng.lognormvariate(0, 0.25) * write_ms / 1000,
            "Disk_Reads_persec": rng.uniform(800, 1200),
            "Disk_Writes_persec": rng.uniform(150, 250),
            "Current_Disk_Queue_Length": float(rng.randint(0, 8)),
        }
        field_text = ",".join(f"{escape_field_key(k)}={v:.9g}" for k, v in fields.items())
        out.append(f"win_disk,host={host},source={host},objectname=LogicalDisk,instance={disk} {field_text} {ts_ns}")
    return out


def play(address: tuple[str, int], hosts: int, duration: float, interval: float = 1.0, on_tick=None) -> int:
    """Send one sample per host every `interval` seconds for `duration` seconds; returns lines sent."""
    rng = random.Random(7)
    names = [f"sql{i:02d}" for i in range(1, hosts + 1)]
    sent = 0
    with socket.create_connection(address, timeout=10) as sock:
        end = time.monotonic() + duration
        while time.monotonic() < end:
            ts_ns = time.time_ns()
            lines = [line for h in names for line in host_lines(h, ts_ns, rng)]
            sock.sendall(("\n".join(lines) + "\n").encode())
            sent += len(lines)
            if on_tick:
                on_tick(sent)
            time.sleep(interval)
    return sent
