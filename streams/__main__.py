"""`python -m streams` runs the service's own commands (streams/cli.py); `placement-stream` adds the client tools."""

import sys

from streams.cli import main

sys.exit(main())
