import sys

from sanlensctl.errors import SanlensError

try:
    from sanlensctl.cli import main
except SanlensError as err:  # a setting of the environment that is not one, found as the settings are read
    print(f"sanlens: error: {err}", file=sys.stderr)
    raise SystemExit(2) from None

raise SystemExit(main())
