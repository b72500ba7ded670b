#!/usr/bin/env bash
# The whole test suite on a fresh machine: virtualenv, Kafka broker cache, lint, types, unit, conformance
# and real-broker integration tests. Extra arguments go to pytest.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/bootstrap.sh
.venv/bin/python -m localbroker fetch
.venv/bin/python -m localkube fetch  # builds the tests' Kubernetes API server once (Go), then cached
echo "== ruff"; .venv/bin/ruff check . && .venv/bin/ruff format --check .
echo "== mypy (strict: topics, engine, streams, advisors, deployers, localbroker, localkube)"; .venv/bin/mypy
echo "== pytest"; .venv/bin/pytest "$@"
if [ "${PLACEMENT_NATIVE:-1}" != 0 ] && [ $# -eq 0 ]; then
  echo "== pytest, engine and topics on the Python sources (PLACEMENT_NATIVE=0)"
  PLACEMENT_NATIVE=0 .venv/bin/pytest -q tests/engine tests/topics --ignore=tests/engine/test_engine_native.py
fi
