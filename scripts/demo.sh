#!/usr/bin/env bash
# Quick start: virtualenv, a local Kafka broker, the processor, two example advisors and example events;
# decisions are printed as they are published. Ctrl-C stops everything.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/bootstrap.sh
exec .venv/bin/placement-stream demo "$@"
