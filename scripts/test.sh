#!/usr/bin/env bash
# Every test, against what users get:
#   - set-up (scripts/setup.sh): the sdist, and the wheel built from it; LibreOffice for the workbook tests;
#   - C++: the doctest suite (ctest) and the benchmarks' build, with the header libraries fetched
#     at their pinned releases (the path of a machine without Debian's -dev packages);
#   - the C++ package: `cmake --install`, then examples/cpp built against it with find_package;
#   - Python: the wheel installed with its [test,notebook] extras into a fresh virtual environment
#     outside the source tree, and pytest (API, CLI, catalog schemas, README, notebooks) run from
#     outside it, so only the installed package can be imported.
# Arguments go to pytest. Last, docs/validation.md is checked against this build (scripts/validation_report.py --check).
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT="$PWD"
CAPPLAN_SETUP_FOR_TESTS=1 bash scripts/setup.sh
export CAPPLAN_REQUIRE_LIBREOFFICE=1  # the workbook tests fail, not skip, without it

export CMAKE_CXX_COMPILER_LAUNCHER=ccache CMAKE_CUDA_COMPILER_LAUNCHER=ccache CCACHE_BASEDIR="$ROOT"
cmake -S . -B build/cpp -G Ninja -DCMAKE_BUILD_TYPE=Release -DCAPPLAN_BUILD_PYTHON=OFF \
      -DCAPPLAN_FETCH_DEPENDENCIES=ON >build/cpp-configure.log || { cat build/cpp-configure.log; exit 1; }
grep '^-- capplan:' build/cpp-configure.log
cmake --build build/cpp -j "$(nproc)"
ctest --test-dir build/cpp --output-on-failure

rm -rf build/cpp-install build/example
cmake --install build/cpp --prefix build/cpp-install >/dev/null
cmake -S examples/cpp -B build/example -G Ninja -DCMAKE_PREFIX_PATH="$ROOT/build/cpp-install" >/dev/null
cmake --build build/example
build/example/plan_assistant

wheel="$(ls "$ROOT"/build/dist/capplan-*.whl)"  # the one setup.sh built
outside="$(mktemp -d)"
trap 'rm -rf "$outside"' EXIT
"${PYTHON:-python3}" -m venv "$outside/venv"
"$outside/venv/bin/python" -m pip install -q --disable-pip-version-check "$wheel[test,notebook]"
cd "$outside"
CAPPLAN_TESTS_AGAINST_WHEEL=1 "$outside/venv/bin/python" -m pytest -q -p no:cacheprovider "$ROOT/tests/python" "$@"
# docs/validation.md must be what this build predicts for the published rows (fitted and held out).
"$outside/venv/bin/python" "$ROOT/scripts/validation_report.py" --check
