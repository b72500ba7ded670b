#!/usr/bin/env bash
# The whole test suite on a fresh machine: virtualenv, Kafka broker cache, lint, types, unit, conformance
# and real-broker integration tests. Extra arguments go to pytest.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/bootstrap.sh
.venv/bin/python -m localbroker fetch
bash scripts/tools.sh helm >/dev/null             # Helm for tests/deploy, built once from its Go module
bash scripts/tools.sh node-validators >/dev/null  # CRD schema validators and the PromQL parser, installed once
.venv/bin/python -m localkube fetch  # builds the tests' Kubernetes API server once (Go), then cached
echo "== ruff"; .venv/bin/ruff check . && .venv/bin/ruff format --check .
echo "== mypy (strict: topics, engine, streams, advisors, deployers, localbroker, localkube)"; .venv/bin/mypy
echo "== pytest"; .venv/bin/pytest "$@"
