#!/usr/bin/env bash
# Everything a fresh Debian 12 machine needs, then capplan built as users get it:
#   1. apt: only the compiler, CMake/Ninja and the C++ header libraries (and ccache);
#   2. .venv/: a virtual environment on the machine's own python3 (no system site-packages);
#   3. dist/: the sdist (pyproject-build --sdist), and the wheel built from that sdist alone
#      (pip wheel, build isolation on: scikit-build-core and pybind11 come from the index);
#   4. the wheel installed into .venv (what `bash scripts/demo.sh` runs).
# Safe to re-run; when the wheel's sources have not changed it rebuilds nothing (a hash of them is
# kept in dist/.source-hash), and a rebuild reuses ccache.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT="$PWD"
PYTHON="${PYTHON:-python3}"

APT_PKGS=(g++ cmake ninja-build ccache libeigen3-dev nlohmann-json3-dev libfmt-dev doctest-dev libbenchmark-dev)
# Debian's own python3 needs its venv module and headers from apt; pyenv's or a distribution's
# other Pythons bring both.
if [ "$(command -v "$PYTHON")" = /usr/bin/python3 ]; then APT_PKGS+=(python3-venv python3-dev); fi
missing=()
for p in "${APT_PKGS[@]}"; do
  dpkg-query -W -f='${db:Status-Abbrev}' "$p" 2>/dev/null | grep -q '^ii' || missing+=("$p")
done
if ((${#missing[@]})); then
  SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO="sudo"
  echo "setup: installing ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  $SUDO apt-get install -y --no-install-recommends "${missing[@]}" >/dev/null ||
    { $SUDO apt-get update >/dev/null && $SUDO apt-get install -y --no-install-recommends "${missing[@]}" >/dev/null; }
fi

export PIP_DISABLE_PIP_VERSION_CHECK=1
# A venv made by an earlier version of this script saw Debian's site-packages: start it afresh.
if grep -qs 'include-system-site-packages = true' .venv/pyvenv.cfg; then rm -rf .venv; fi
[ -x .venv/bin/python ] || "$PYTHON" -m venv .venv
# Checked by its command: `import build` here would find the folder build/ (a namespace package).
[ -x .venv/bin/pyproject-build ] || .venv/bin/python -m pip install -q build

# The wheel's inputs; tests, docs and notebooks do not change it.
source_hash() {
  git ls-files -co --exclude-standard -z -- CMakeLists.txt cmake include src python models pyproject.toml README.md |
    xargs -0 -r sha256sum 2>/dev/null | sha256sum | cut -c1-16
}
hash="$( (git rev-parse --is-inside-work-tree >/dev/null 2>&1 && source_hash) || echo none)"
wheel="$(ls dist/capplan-*.whl 2>/dev/null | head -1 || true)"
if [ "$hash" = none ] || [ -z "$wheel" ] || [ "$(cat dist/.source-hash 2>/dev/null)" != "$hash" ]; then
  echo "setup: building the sdist, then the wheel from it (a few minutes the first time)"
  rm -rf dist build/sdist && mkdir -p build/sdist
  .venv/bin/pyproject-build --sdist --outdir dist . >build/sdist.log 2>&1 || { cat build/sdist.log; exit 1; }
  tar xzf dist/capplan-*.tar.gz -C build/sdist
  src="$(ls -d build/sdist/capplan-*)"
  # A fixed extraction folder lets ccache reuse objects between rebuilds.
  CMAKE_CXX_COMPILER_LAUNCHER=ccache CMAKE_CUDA_COMPILER_LAUNCHER=ccache CCACHE_BASEDIR="$ROOT/$src" \
    .venv/bin/python -m pip wheel -q --no-deps --wheel-dir dist "$src" >build/wheel.log 2>&1 ||
    { tail -n 60 build/wheel.log; echo "setup: the wheel did not build (whole log: build/wheel.log)"; exit 1; }
  echo "$hash" >dist/.source-hash
  wheel="$(ls dist/capplan-*.whl)"
fi
if [ "$(cat .venv/.capplan-source-hash 2>/dev/null)" != "$hash" ] || [ "$hash" = none ]; then
  .venv/bin/python -m pip install -q --force-reinstall --no-deps "$wheel"
  echo "$hash" >.venv/.capplan-source-hash
fi
.venv/bin/python -c "import capplan" # fails loudly if the install did not work
