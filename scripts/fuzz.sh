#!/usr/bin/env bash
# The libFuzzer harnesses of fuzz/ (issue #21 item 3), each under ASan + UBSan for SECONDS (default 60), from a seed
# corpus of the repository's own inputs: scenarios (examples/scenarios), Hugging Face configs (tests/data/hf_configs),
# catalog entries (models/), nccl-tests outputs (tests/data/nccl-tests), unit strings and a calibration file
# (fuzz/seeds). Needs clang and its sanitizer runtimes (Debian 12: apt-get install clang libclang-rt-14-dev; the
# runtimes are only recommended by clang, so --no-install-recommends leaves them out). The corpora grow in build/fuzz/corpus; a finding leaves a
# crash-* / leak-* / timeout-* file in build/fuzz/findings and stops with its harness's name. docs/reliability.md
# records the runs (executions and findings).
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT="$PWD"
SECONDS_EACH="${1:-60}"
CXX_CLANG="$(command -v clang++ || command -v clang++-14 || true)"
[ -n "$CXX_CLANG" ] || { echo "fuzz.sh: needs clang++ (Debian: apt-get install clang libclang-rt-14-dev)" >&2; exit 2; }
[ -f "$("$CXX_CLANG" -print-file-name=libclang_rt.fuzzer-x86_64.a)" ] ||
    { echo "fuzz.sh: $CXX_CLANG has no libFuzzer runtime (Debian: apt-get install libclang-rt-14-dev)" >&2; exit 2; }
export CMAKE_CXX_COMPILER_LAUNCHER=ccache CCACHE_BASEDIR="$ROOT"
mkdir -p build
cmake --preset fuzz -DCMAKE_CXX_COMPILER="$CXX_CLANG" -DCAPPLAN_FETCH_DEPENDENCIES=ON >build/fuzz-configure.log 2>&1 ||
    { cat build/fuzz-configure.log; exit 1; }
cmake --build --preset fuzz

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
        "build/fuzz/capplan_fuzz_$target" "$corpus/$target" -max_total_time="$SECONDS_EACH" -timeout=20 \
        -rss_limit_mb=4096 -max_len=65536 -print_final_stats=1 -artifact_prefix="$findings/$target-" \
        >"build/fuzz/$target.log" 2>&1 || { tail -40 "build/fuzz/$target.log"; echo "fuzz.sh: $target found something"; exit 1; }
    grep -E "^stat::number_of_executed_units|^Done" "build/fuzz/$target.log" | tail -2
done
echo "fuzz.sh: nothing found"
