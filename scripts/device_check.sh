#!/usr/bin/env bash
# The one prepared GPU run (issue 24): build the core, the Python module and the GPU check with
# CUDA, run the GPU tests, `capplan calibrate --backend cuda` for each model in $MODELS, and the
# end-to-end prefill / decode step of each (scripts/device_step.py). Everything it measures and
# logs goes to $OUT (or ./device-out): the calibration files, the end-to-end timings, and the logs
# (nvidia-smi's report, the toolchain, each stage's output) as device-logs.tar.gz.
# Built for a machine that reaches no network: the C++ header libraries come from ./.devdeps when it
# is there (scripts/device_prepare.sh makes it; carry it with the call), cublasLt.h from the toolkit
# or pip's nvidia-cublas. STEP=0 skips the eager end-to-end steps, COMPILED=0 the compiled ones. Each
# stage runs even when an earlier one failed (all but the build); the exit status is the number of
# failed stages. On the H200 of 2026-12-04 the whole run took 3.6 minutes.
set -uo pipefail
cd "$(dirname "$0")/.."
ROOT="$PWD"
OUT="${OUT:-$ROOT/device-out}"
MODELS="${MODELS:-llama-3.1-8b qwen3-8b}"
PY="${PYTHON:-python3}"
LOGS="$(mktemp -d)"  # the logs, packed into $OUT/device-logs.tar.gz at the end (the device tool
mkdir -p "$OUT"      # brings back at most 8 files: the calibrations, the step timings and that archive)
trap 'tar czf "$OUT/device-logs.tar.gz" -C "$LOGS" .' EXIT
failed=0
stage() {  # stage NAME COMMAND...: runs it, its output to $LOGS/NAME.log and the terminal
    local name=$1
    shift
    echo "== $name ($(date -u +%T))"
    if ! "$@" 2>&1 | tee "$LOGS/$name.log"; then
        echo "!! $name failed"
        failed=$((failed + 1))
        return 1
    fi
}

nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,clocks.mem,clocks.max.mem,power.limit,temperature.gpu \
    --format=csv | tee "$LOGS/nvidia-smi.csv"
{ nvcc --version; g++ --version | head -1; cmake --version | head -1; "$PY" -c 'import sys, torch, pybind11
print(sys.version); print("torch", torch.__version__, "cuda", torch.version.cuda); print("pybind11", pybind11.__version__)'; } \
    > "$LOGS/toolchain.txt" 2>&1

# cuBLASLt: headers for the build, the library for dlopen at run time.
site=$("$PY" -c 'import site; print(" ".join(site.getsitepackages()))')
lt_include=""
for d in /usr/local/cuda/include $(for s in $site; do echo "$s/nvidia/cu13/include $s/nvidia/cublas/include"; done); do
    if [ -f "$d/cublasLt.h" ]; then lt_include=$d; break; fi
done
for s in $site; do
    for d in "$s/nvidia/cu13/lib" "$s/nvidia/cublas/lib"; do
        [ -d "$d" ] && export LD_LIBRARY_PATH="$d${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
    done
done
echo "cublasLt.h: ${lt_include:-not found}; LD_LIBRARY_PATH=${LD_LIBRARY_PATH:-}" | tee -a "$LOGS/toolchain.txt"

deps=()
if [ -d .devdeps ]; then
    deps=(-DCAPPLAN_FETCH_DEPENDENCIES=ON -DFETCHCONTENT_FULLY_DISCONNECTED=ON)
    for d in eigen3 nlohmann_json fmt doctest; do
        deps+=("-DFETCHCONTENT_SOURCE_DIR_CAPPLAN_DEP_${d^^}=$ROOT/.devdeps/$d")
    done
fi
B=build/device
configure() {
    cmake -S . -B $B -G Ninja -DCMAKE_BUILD_TYPE=Release -DCAPPLAN_BUILD_BENCH=OFF -DCAPPLAN_BUILD_TESTS=ON \
        -DCMAKE_CUDA_ARCHITECTURES=90 -DPython_EXECUTABLE="$(command -v "$PY")" \
        ${lt_include:+-DCAPPLAN_CUBLASLT_INCLUDE=$lt_include} ${deps[@]+"${deps[@]}"}
}
stage configure configure || { echo "configure failed: nothing to run"; exit 1; }
stage build_cpp timeout 300 cmake --build $B -j "$(nproc)" --target capplan_gpu_check || { echo "no GPU check built"; exit 1; }
stage gpu_check timeout 60 $B/capplan_gpu_check
# The Python module needs the interpreter's headers; without them the C++ check calibrates.
python_ok=0
stage build_python timeout 300 cmake --build $B -j "$(nproc)" --target _core && cp $B/_core*.so python/capplan/ && python_ok=1
export PYTHONPATH="$ROOT/python${PYTHONPATH:+:$PYTHONPATH}" PYTHONUNBUFFERED=1
[ $python_ok = 1 ] && stage pytest_cuda timeout 120 "$PY" -m pytest -q -p no:cacheprovider tests/python/test_calibration_cuda.py
for model in $MODELS; do
    name=$("$PY" -c "import json; print(json.load(open('models/llm/$model.json'))['name'])")
    if [ $python_ok = 1 ]; then
        stage "calibrate-$model" timeout 150 "$PY" -m capplan calibrate --backend cuda --model "$name" --accelerator H200 \
            --max-time "0.3 s" -o "$OUT/calibration-$model.json"
    else
        stage "calibrate-$model" timeout 150 $B/capplan_gpu_check --calibrate "$name" H200 "$OUT/calibration-$model.json"
    fi
    [ "${STEP:-1}" = 1 ] && stage "step-$model" timeout 150 "$PY" scripts/device_step.py "models/llm/$model.json" -o "$OUT/step-$model.json"
done
# Each model's step again with the element-wise work fused by torch.compile, as vLLM V1 runs it.
for model in $MODELS; do
    [ "${COMPILED:-1}" = 1 ] && stage "step-compiled-$model" timeout 150 "$PY" scripts/device_step.py \
        "models/llm/$model.json" --compile -o "$OUT/step-compiled-$model.json"
done
nvidia-smi --query-gpu=clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv >> "$LOGS/nvidia-smi.csv"
echo "== done: $failed failed stage(s)"
exit $failed
