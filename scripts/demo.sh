#!/usr/bin/env bash
# Quick start: virtualenv, a local Kafka broker, the processor, two example advisors, the example deployer and
# the example YAML (published with `placement-stream apply -f`); decisions and the deployer's files are printed
# as they change. Ctrl-C (or SIGTERM) stops everything, the broker included.
set -euo pipefail
cd "$(dirname "$0")/.."
# setuptools announces every editable install on stderr ("Editable installation ..."): nothing to act on here
PYTHONWARNINGS="ignore:Editable installation" bash scripts/bootstrap.sh
exec .venv/bin/placement-stream demo "$@"
