#!/usr/bin/env bash
# Set-up, then the main job on the built-in default scenario (an internal assistant for ~50
# colleagues on one 8-GPU server). Pass a scenario file to estimate that one instead.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
.venv/bin/capplan estimate "$@"
