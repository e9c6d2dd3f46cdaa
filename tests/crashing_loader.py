"""The loader, crashed between an insert and its commit: it exits with CRASH_STATUS right after its Nth insert
into a table, before that batch's offsets go to the commit. The fault is the test's, so the loader carries none.

    python tests/crashing_loader.py N [loader.py's arguments]
"""

from __future__ import annotations

import os
import sys

from ingest.loader import loader

CRASH_STATUS = 17


def crash_after(inserts: int) -> None:
    insert, done = loader.Loader.insert, []

    def insert_then_crash(self, *args, **kwargs):
        insert(self, *args, **kwargs)
        done.append(1)
        if len(done) >= inserts:
            os._exit(CRASH_STATUS)  # no cleanup, as a kill: inserted, offsets never committed

    loader.Loader.insert = insert_then_crash


if __name__ == "__main__":
    crash_after(int(sys.argv.pop(1)))
    sys.exit(loader.main())
