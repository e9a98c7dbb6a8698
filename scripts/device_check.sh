#!/usr/bin/env bash
# The one prepared GPU run (issue 8.6): build, the GPU checks, then the CUDA calibration of a model's
# layer, written to $OUT (or ./device-out). For the `device` machine: keep it to a few minutes.
set -euo pipefail
cd "$(dirname "$0")/.."
OUT="${OUT:-$PWD/device-out}"
mkdir -p "$OUT"
bash scripts/setup.sh
export CMAKE_CXX_COMPILER_LAUNCHER=ccache CMAKE_CUDA_COMPILER_LAUNCHER=ccache CCACHE_BASEDIR="$PWD"
cmake -S . -B build/cpp -G Ninja -DCMAKE_BUILD_TYPE=Release -DCAPPLAN_BUILD_PYTHON=OFF -DCAPPLAN_BUILD_BENCH=OFF >/dev/null
cmake --build build/cpp -j "$(nproc)" --target capplan_gpu_check
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,clocks.max.mem --format=csv | tee "$OUT/nvidia-smi.csv" || true
build/cpp/capplan_gpu_check | tee "$OUT/gpu_check.txt"
.venv/bin/python -m pytest -q tests/python/test_calibration_cuda.py | tee "$OUT/pytest_cuda.txt"
MODEL="${MODEL:-Llama-3.1-8B}"
.venv/bin/capplan calibrate --backend cuda --model "$MODEL" --max-time 0.3s -o "$OUT/calibration-$MODEL.json" \
  | tee "$OUT/calibrate.txt"
