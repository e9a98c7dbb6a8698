#!/usr/bin/env bash
# The C++ tests under sanitizers (issue #21 item 4; docs/reliability.md records the runs). Arguments: the presets to
# run (default: asan tsan-threads, what CI runs), after --build (build only) or --run (run what was built) if given;
# any finding stops the run (no recovery). clang builds them all
# (installed from Debian when missing: scripts/toolchain.sh):
#   - asan: every doctest case under AddressSanitizer + UndefinedBehaviorSanitizer, built at -O0 with the libFuzzer
#     harnesses of fuzz/ beside them (one build for both; CI then runs `scripts/fuzz.sh 10 asan` on it): about
#     3 minutes from a clean tree on 2 cores, 45 s of tests;
#   - tsan-threads: the tests of the multithreaded paths (run_threads and worker_pool, the layout search and the
#     inference grid on four threads, the CPU probes' threads: tests/cpp/test_threads.cpp, test_parallel_search.cpp,
#     test_cpu_isa.cpp) under ThreadSanitizer: about 1.5 minutes of build at -O0, 1 s of tests;
#   - tsan: every doctest case under ThreadSanitizer, at -O1 (about 5 minutes). Run it before changing threaded code.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/toolchain.sh
find_clang sanitize.sh
export CMAKE_CXX_COMPILER_LAUNCHER=ccache CCACHE_BASEDIR="$PWD"
mkdir -p build
steps=build,run
case "${1:-}" in --build) steps=build; shift ;; --run) steps=run; shift ;; esac
presets=("$@")
[ ${#presets[@]} -eq 0 ] && presets=(asan tsan-threads)
for preset in "${presets[@]}"; do
    case "$preset" in
        asan) export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 ;;
        tsan|tsan-threads) export TSAN_OPTIONS=halt_on_error=1:second_deadlock_stack=1 ;;
        *) echo "sanitize.sh: unknown preset '$preset' (asan, tsan-threads, tsan)" >&2; exit 2 ;;
    esac
    if [[ "$steps" == *build* ]]; then
        forget_other_compiler "build/$preset" "$CXX_CLANG"
        cmake --preset "$preset" -DCMAKE_CXX_COMPILER="$CXX_CLANG" -DCAPPLAN_FETCH_DEPENDENCIES=ON \
            >"build/$preset-configure.log" 2>&1 || { cat "build/$preset-configure.log"; exit 1; }
        cmake --build --preset "$preset"
    fi
    [[ "$steps" == *run* ]] || continue
    "build/$preset/capplan_tests"
    echo "sanitize.sh: $preset found nothing in the C++ tests"
done
