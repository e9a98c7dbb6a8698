#!/usr/bin/env bash
# The C++ tests under sanitizers (issue #21 item 4; docs/reliability.md records the runs). Arguments: the presets to
# run, "asan" and/or "tsan" (default both); any finding stops the run (no recovery).
#   - asan: every doctest case under AddressSanitizer + UndefinedBehaviorSanitizer, built at -O0 (about 4 minutes from
#     a clean tree on 2 cores, 25 s of tests): CI runs it after the README's test command (.ci/run).
#   - tsan: every doctest case under ThreadSanitizer, at -O1 (about 5 minutes): the multithreaded paths are
#     run_threads, worker_pool, the layout search and the inference grid on four threads
#     (tests/cpp/test_parallel_search.cpp) and the CPU probes. Run it before changing threaded code.
set -euo pipefail
cd "$(dirname "$0")/.."
export CMAKE_CXX_COMPILER_LAUNCHER=ccache CCACHE_BASEDIR="$PWD"
mkdir -p build
presets=("$@")
[ ${#presets[@]} -eq 0 ] && presets=(asan tsan)
for preset in "${presets[@]}"; do
    case "$preset" in
        asan) export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 ;;
        tsan) export TSAN_OPTIONS=halt_on_error=1:second_deadlock_stack=1 ;;
        *) echo "sanitize.sh: unknown preset '$preset' (asan, tsan)" >&2; exit 2 ;;
    esac
    cmake --preset "$preset" -DCAPPLAN_FETCH_DEPENDENCIES=ON >"build/$preset-configure.log" 2>&1 ||
        { cat "build/$preset-configure.log"; exit 1; }
    cmake --build --preset "$preset" --target capplan_tests
    "build/$preset/capplan_tests"
    echo "sanitize.sh: $preset found nothing in the C++ tests"
done
