#!/usr/bin/env bash
# The C++ tests under sanitizers (issue #21 item 4; docs/reliability.md records the runs):
#   - every doctest case under AddressSanitizer + UndefinedBehaviorSanitizer (CMakePresets.json "asan"),
#   - the multithreaded paths (run_threads, worker_pool, the layout search and the inference grid on four threads,
#     the CPU probes' threads) under ThreadSanitizer ("tsan").
# Any finding stops the run (no recovery). From a clean tree the two builds take about 25 minutes on 2 cores, which is
# why CI (15 minutes for the whole test run) does not run this; run it before changing threaded or parsing code.
set -euo pipefail
cd "$(dirname "$0")/.."
export CMAKE_CXX_COMPILER_LAUNCHER=ccache CCACHE_BASEDIR="$PWD"
mkdir -p build
for preset in asan tsan; do
    cmake --preset "$preset" -DCAPPLAN_FETCH_DEPENDENCIES=ON >"build/$preset-configure.log" 2>&1 ||
        { cat "build/$preset-configure.log"; exit 1; }
    cmake --build --preset "$preset" --target capplan_tests
done
ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 build/asan/capplan_tests
TSAN_OPTIONS=halt_on_error=1:second_deadlock_stack=1 build/tsan/capplan_tests \
    -tc="*run_threads*,*worker_pool*,*thread_count*,layout search: four threads*,inference grid: four threads*,probe threads*"
echo "sanitize: ASan + UBSan (every test) and TSan (threaded paths) found nothing"
