#!/usr/bin/env bash
# Before scripts/device_check.sh runs on a machine without network (the `device` tool's): copies the
# header libraries CMake fetched into build/cpp/_deps (scripts/test.sh builds it) to .devdeps/, trimmed
# to the headers (about 9 MB), and keeps git from listing them. Name .devdeps in the call's `carry`.
set -euo pipefail
cd "$(dirname "$0")/.."
D=build/cpp/_deps
[ -d "$D/capplan_dep_eigen3-src" ] || { echo "no $D: run bash scripts/test.sh first" >&2; exit 1; }
rm -rf .devdeps
mkdir -p .devdeps/eigen3 .devdeps/nlohmann_json .devdeps/fmt .devdeps/doctest/doctest
cp -r "$D/capplan_dep_eigen3-src/Eigen" .devdeps/eigen3/
cp -r "$D/capplan_dep_nlohmann_json-src/single_include" .devdeps/nlohmann_json/
cp -r "$D/capplan_dep_fmt-src/include" .devdeps/fmt/
cp "$D/capplan_dep_doctest-src/doctest/doctest.h" .devdeps/doctest/doctest/
grep -qx '/.devdeps/' .git/info/exclude 2>/dev/null || echo '/.devdeps/' >> .git/info/exclude
du -sh .devdeps
