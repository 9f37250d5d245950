"""``python -m relulab`` runs the command line."""

from relulab.cli import main

raise SystemExit(main())
