"""The local stack's components, one module each: NAME, PROCESSES, PORT, start, probe (their order: supervised.py)."""
