"""``python -m relulab.cli`` runs the command line."""

from relulab.cli import main

raise SystemExit(main())
