"""How the command line prints rows: an aligned table with its row count, CSV or JSON."""

from __future__ import annotations

import csv
import json
import sys


def print_rows(columns, rows, fmt: str = "table", out=None) -> None:
    out = out or sys.stdout
    if fmt == "csv":
        writer = csv.writer(out)
        writer.writerow(columns)
        writer.writerows(rows)
    elif fmt == "json":
        print(json.dumps([dict(zip(columns, r)) for r in rows], default=str, indent=1), file=out)
    else:
        cells = [[str(c) for c in columns]] + [["" if v is None else str(v) for v in r] for r in rows]
        widths = [max(len(row[i]) for row in cells) for i in range(len(columns))]
        line = lambda row: "  ".join(v.ljust(w) for v, w in zip(row, widths)).rstrip()
        if columns:  # an empty result can come without its columns' names: no header then, only the count
            print(line(cells[0]), file=out)
            print("  ".join("-" * w for w in widths), file=out)
        for row in cells[1:]:
            print(line(row), file=out)
        print(f"({len(rows)} row{'s' if len(rows) != 1 else ''})", file=out)
