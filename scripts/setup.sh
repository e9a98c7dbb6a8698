#!/usr/bin/env bash
# Everything a fresh Debian 12 machine needs, then capplan built as users get it:
#   1. apt: only the compiler, CMake/Ninja and the C++ header libraries (and ccache; Python itself
#      with its venv module and headers only where the machine has no python3 or uses Debian's; for
#      scripts/test.sh, LibreOffice's headless Calc);
#   2. .venv/: a virtual environment on the machine's own python3 (no system site-packages);
#   3. build/dist/: the sdist (pyproject-build --sdist), and the wheel built from that sdist alone
#      (pip wheel, build isolation on: scikit-build-core and pybind11 come from the index);
#   4. the wheel installed into .venv (what `bash scripts/demo.sh` runs).
# Safe to re-run; when the wheel's inputs have not changed it rebuilds nothing (a hash of them, the
# interpreter and the build switches is kept in build/dist/.source-hash), and a rebuild reuses ccache.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT="$PWD"
PYTHON="${PYTHON:-python3}"
mkdir -p build

APT_PKGS=(g++ cmake ninja-build ccache libeigen3-dev nlohmann-json3-dev libfmt-dev doctest-dev libbenchmark-dev)
# scripts/test.sh: LibreOffice's headless Calc recalculates the workbooks' live formulas (tests/python/test_workbook.py).
if [ -n "${CAPPLAN_SETUP_FOR_TESTS:-}" ]; then APT_PKGS+=(libreoffice-calc-nogui); fi
# Debian's own Python needs its venv module and headers from apt; pyenv's, conda's or a
# self-built one bring both. No python3 at all: Debian's.
py_path="$(command -v "$PYTHON" || true)"
if [ -z "$py_path" ] || [[ "$(readlink -f "$py_path")" == /usr/bin/python3* ]]; then
  APT_PKGS+=(python3 python3-venv python3-dev)
fi
source scripts/toolchain.sh
install_missing_packages setup "${APT_PKGS[@]}"

export PIP_DISABLE_PIP_VERSION_CHECK=1
# A venv made by an earlier version of this script saw Debian's site-packages: start it afresh.
if grep -qs 'include-system-site-packages = true' .venv/pyvenv.cfg; then rm -rf .venv; fi
[ -x .venv/bin/python ] || "$PYTHON" -m venv .venv
# Checked by its command: `import build` here would find the folder build/ (a namespace package).
[ -x .venv/bin/pyproject-build ] || .venv/bin/python -m pip install -q build

# The wheel's inputs (tests, docs and notebooks do not change it), the interpreter and the switches.
WHEEL_INPUTS=(CMakeLists.txt cmake include src python models pyproject.toml README.md)
list_inputs() {
  if git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
    git ls-files -co --exclude-standard -z -- "${WHEEL_INPUTS[@]}"
  else
    find "${WHEEL_INPUTS[@]}" -type f -print0 | sort -z
  fi
}
source_hash() {
  { list_inputs | while IFS= read -r -d "" f; do if [ -f "$f" ]; then sha256sum "$f"; fi; done
    .venv/bin/python -c 'import sys; print(sys.version, sys.executable)'
    echo "cuda=${CAPPLAN_ENABLE_CUDA:-} fetch=${CAPPLAN_FETCH_DEPENDENCIES:-}"; } | sha256sum | cut -c1-16
}
hash="$(source_hash)"
DIST=build/dist
wheel="$(ls "$DIST"/capplan-*.whl 2>/dev/null | head -1 || true)"
if [ -z "$wheel" ] || [ "$(cat "$DIST/.source-hash" 2>/dev/null)" != "$hash" ]; then
  echo "setup: building the sdist, then the wheel from it (a few minutes the first time)"
  rm -rf "$DIST" build/sdist && mkdir -p "$DIST" build/sdist
  .venv/bin/pyproject-build --sdist --outdir "$DIST" . >build/sdist.log 2>&1 || { cat build/sdist.log; exit 1; }
  tar xzf "$DIST"/capplan-*.tar.gz -C build/sdist
  src="$(ls -d build/sdist/capplan-*)"
  # A fixed extraction folder lets ccache reuse objects between rebuilds.
  CMAKE_CXX_COMPILER_LAUNCHER=ccache CMAKE_CUDA_COMPILER_LAUNCHER=ccache CCACHE_BASEDIR="$ROOT/$src" \
    .venv/bin/python -m pip wheel -q --no-deps --wheel-dir "$DIST" "$src" >build/wheel.log 2>&1 ||
    { tail -n 60 build/wheel.log; echo "setup: the wheel did not build (whole log: build/wheel.log)"; exit 1; }
  echo "$hash" >"$DIST/.source-hash"
  wheel="$(ls "$DIST"/capplan-*.whl)"
fi
# Reinstall when the wheel changed or the venv lost it (uninstalled, a broken install).
if [ "$(cat .venv/.capplan-source-hash 2>/dev/null)" != "$hash" ] || ! .venv/bin/python -c "import capplan" 2>/dev/null; then
  .venv/bin/python -m pip install -q --force-reinstall --no-deps "$wheel"
  echo "$hash" >.venv/.capplan-source-hash
fi
.venv/bin/python -c "import capplan" # fails loudly if the install did not work
