"""Write the CEL parse table the engine ships (engine/cluster/matching/cel_parser_table.json, package data).

Run it after upgrading lark or cel-python, when the table test says the fingerprint changed:
    .venv/bin/python scripts/cel_parser_table.py
The table is written in a canonical numbering with sorted keys, so every run writes the same bytes (a test
regenerates it and compares).
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from engine.cluster.matching.cel_parser_table import TABLE_FILE, build_parser, table_text  # noqa: E402

OUT = ROOT / "engine/cluster/matching" / TABLE_FILE

OUT.write_bytes(table_text(build_parser()).encode("ascii"))
print(f"wrote {OUT} ({OUT.stat().st_size} bytes)")
