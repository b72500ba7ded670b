"""`python -m streams` is the `placement-stream` command."""

import sys

from streams.cli import main

sys.exit(main())
