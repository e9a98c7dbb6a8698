#!/usr/bin/env bash
# Runs every test: set-up, the C++ doctest suite (ctest), the benchmarks' build, then pytest
# (API, CLI, catalog schemas, README example, notebooks).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh

export CMAKE_CXX_COMPILER_LAUNCHER=ccache CMAKE_CUDA_COMPILER_LAUNCHER=ccache CCACHE_BASEDIR="$PWD"
cmake -S . -B build/cpp -G Ninja -DCMAKE_BUILD_TYPE=Release -DCAPPLAN_BUILD_PYTHON=OFF >/dev/null
cmake --build build/cpp -j "$(nproc)"
ctest --test-dir build/cpp --output-on-failure
.venv/bin/python -m pytest -q "$@"
