from sanlensctl.cli import main

raise SystemExit(main())
