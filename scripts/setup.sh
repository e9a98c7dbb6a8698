#!/usr/bin/env bash
# Everything a fresh Debian 12 machine needs: apt packages, a venv on Debian's Python that sees
# them, and capplan installed into it (editable, offline). Safe to re-run; fast when nothing changed.
set -euo pipefail
cd "$(dirname "$0")/.."

APT_PKGS=(g++ cmake ninja-build python3-dev python3-venv python3-pip python3-setuptools python3-wheel
          pybind11-dev libeigen3-dev nlohmann-json3-dev libfmt-dev doctest-dev libbenchmark-dev
          python3-numpy python3-pytest python3-jsonschema python3-openpyxl python3-nbclient python3-nbformat python3-ipykernel
          python3-pandas python3-matplotlib python3-tqdm
          ccache)
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

# Debian's python (not pyenv's): it sees apt's numpy/pytest/jsonschema/ipykernel.
[ -x .venv/bin/python ] || /usr/bin/python3 -m venv --system-site-packages .venv

export PIP_NO_INDEX=1 PIP_DISABLE_PIP_VERSION_CHECK=1
export CMAKE_CXX_COMPILER_LAUNCHER=ccache CMAKE_CUDA_COMPILER_LAUNCHER=ccache CCACHE_BASEDIR="$PWD"
.venv/bin/python -m pip install --no-build-isolation -q -e . 2>&1 | grep -v -E "beta|tool.setuptools" || true
.venv/bin/python -c "import capplan" # fails loudly if the install did not work
