"""``python -m localkube fetch|start|stop``."""

from __future__ import annotations

import sys

from localkube.cli import main

__all__: list[str] = []

if __name__ == "__main__":
    sys.exit(main())
