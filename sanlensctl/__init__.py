"""sanlensctl: the command line and the local stack's lifecycle (./sanlens is its launcher)."""
