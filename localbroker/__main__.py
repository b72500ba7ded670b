"""``python -m localbroker fetch|start|stop|status``."""

from __future__ import annotations

import sys

from localbroker.cli import main

__all__: list[str] = []

if __name__ == "__main__":
    sys.exit(main())
