#!/usr/bin/env bash
# The libFuzzer harnesses of fuzz/ (issue #21 item 3), each under ASan + UBSan for SECONDS (default 60), from a seed
# corpus of the repository's own inputs: scenarios (examples/scenarios), Hugging Face configs (tests/data/hf_configs),
# catalog entries (models/), nccl-tests outputs (tests/data/nccl-tests), unit strings and a calibration file
# (fuzz/seeds). PRESET (default fuzz) is the build they come from: `fuzz` (-O2, the faster runs for a long session)
# or `asan` (-O0, the one scripts/sanitize.sh asan built for the tests; CI's smoke runs `fuzz.sh 10 asan`). Needs
# clang with its sanitizer runtimes, installed from Debian when missing (scripts/toolchain.sh). The corpora grow in
# build/fuzz/corpus; a finding leaves a crash-* / leak-* / timeout-* file in build/fuzz/findings and stops with its
# harness's name. docs/reliability.md records the runs (executions and findings).
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT="$PWD"
SECONDS_EACH="${1:-60}"
PRESET="${2:-fuzz}"
# An input's time limit: 20 s in the -O2 build (the simulation's work budget is about 10 s there); the -O0 build with
# its sanitizers runs an input many times slower (a whole estimate: 50-200 times), so a slow input there is not a finding.
case "$PRESET" in fuzz) TIMEOUT=20 ;; asan) TIMEOUT=300 ;; *) echo "fuzz.sh: unknown preset '$PRESET' (fuzz, asan)" >&2; exit 2 ;; esac
source scripts/toolchain.sh
find_clang fuzz.sh
export CMAKE_CXX_COMPILER_LAUNCHER=ccache CCACHE_BASEDIR="$ROOT"
mkdir -p build
forget_other_compiler "build/$PRESET" "$CXX_CLANG"
cmake --preset "$PRESET" -DCMAKE_CXX_COMPILER="$CXX_CLANG" -DCAPPLAN_FETCH_DEPENDENCIES=ON >"build/$PRESET-configure.log" 2>&1 ||
    { cat "build/$PRESET-configure.log"; exit 1; }
cmake --build --preset "$PRESET"

corpus=build/fuzz/corpus findings=build/fuzz/findings
mkdir -p "$findings"
seed() {  # seed TARGET PREFIX_BYTE FILES...: copy each file into the target's corpus, after a prefix byte if given
    local target="$1" prefix="$2"; shift 2
    mkdir -p "$corpus/$target"
    for f in "$@"; do
        [ -f "$f" ] || continue
        local out="$corpus/$target/seed-$(basename "$(dirname "$f")")-$(basename "$f")"
        if [ -n "$prefix" ]; then { printf "$prefix"; cat "$f"; } >"$out"; else cp "$f" "$out"; fi
    done
}
seed scenario "" examples/scenarios/*.json
seed hf_config "" tests/data/hf_configs/*.json
seed catalog_entry '\x00' models/accelerators/*.json
seed catalog_entry '\x01' models/links/*.json
seed catalog_entry '\x02' models/storage/*.json
seed catalog_entry '\x03' models/systems/*.json
seed catalog_entry '\x04' models/sites/*.json
seed nccl_tests '\x00' tests/data/nccl-tests/*.txt
seed units "" fuzz/seeds/units/*
seed calibration "" fuzz/seeds/calibration/* models/calibration/*.json

for target in scenario hf_config catalog_entry nccl_tests units calibration; do
    echo "fuzz.sh: $target for $SECONDS_EACH s"
    ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 \
        "build/$PRESET/capplan_fuzz_$target" "$corpus/$target" -max_total_time="$SECONDS_EACH" -timeout="$TIMEOUT" \
        -rss_limit_mb=4096 -max_len=65536 -print_final_stats=1 -artifact_prefix="$findings/$target-" \
        >"build/fuzz/$target.log" 2>&1 || { tail -40 "build/fuzz/$target.log"; echo "fuzz.sh: $target found something"; exit 1; }
    grep -E "^stat::number_of_executed_units|^Done" "build/fuzz/$target.log" | tail -2
done
echo "fuzz.sh: nothing found"
