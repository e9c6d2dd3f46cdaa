class SanlensError(Exception):
    """A failure the user can act on: printed as one line, `sanlens: error: ...`, exit status 1."""
