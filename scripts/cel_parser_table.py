"""Write the CEL parse table the engine ships (engine/cluster/matching/cel_parser_table.json).

Run it after upgrading lark or cel-python, when the table test says the fingerprint changed:
    .venv/bin/python scripts/cel_parser_table.py
Two runs write different bytes (lark orders some sets by object identity); each run's table parses alike.
"""

from __future__ import annotations

import json
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

from engine.cluster.matching.cel_parser_table import TABLE_PATH, build_parser, table_document

document = table_document(build_parser())
TABLE_PATH.write_text(json.dumps(document, separators=(",", ":")) + "\n")
print(f"wrote {TABLE_PATH} ({TABLE_PATH.stat().st_size} bytes), fingerprint {document['fingerprint'][:12]}")
