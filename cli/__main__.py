"""`python -m cli` is the `placement-stream` command."""

import sys

from cli.main import main

sys.exit(main())
