# Sourced by the build scripts. install_missing_packages WHO PKG... installs, with apt and
# without recommended packages, whichever of PKG are not installed yet (sudo when not root), saying so as WHO.
install_missing_packages() {
  local who="$1" p
  shift
  local missing=()
  for p in "$@"; do
    dpkg-query -W -f='${db:Status-Abbrev}' "$p" 2>/dev/null | grep -q '^ii' || missing+=("$p")
  done
  ((${#missing[@]})) || return 0
  local sudo=""
  [ "$(id -u)" -ne 0 ] && sudo="sudo"
  echo "$who: installing ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  $sudo apt-get install -y --no-install-recommends "${missing[@]}" >/dev/null ||
    { $sudo apt-get update >/dev/null && $sudo apt-get install -y --no-install-recommends "${missing[@]}" >/dev/null; }
}

# find_clang WHO: sets CXX_CLANG to a clang++ with the sanitizer and libFuzzer runtimes, installing Debian 12's
# clang 14 and its runtimes (only recommended by clang, so --no-install-recommends would leave them out) if needed.
find_clang() {
  local who="$1"
  CXX_CLANG="$(command -v clang++ || command -v clang++-14 || true)"
  if [ -z "$CXX_CLANG" ] || [ ! -f "$("$CXX_CLANG" -print-file-name=libclang_rt.fuzzer-x86_64.a)" ]; then
    install_missing_packages "$who" clang-14 libclang-rt-14-dev
    CXX_CLANG="$(command -v clang++-14 || command -v clang++ || true)"
  fi
  [ -n "$CXX_CLANG" ] && [ -f "$("$CXX_CLANG" -print-file-name=libclang_rt.fuzzer-x86_64.a)" ] ||
    { echo "$who: needs clang++ with its runtimes (Debian: apt-get install clang libclang-rt-14-dev)" >&2; return 2; }
}

# forget_other_compiler DIR COMPILER: a build tree DIR configured with another C++ compiler cannot be switched in
# place (CMake deletes its cache half-way); drop that cache so the next configure starts afresh with COMPILER.
forget_other_compiler() {
  local dir="$1" compiler="$2" cached
  cached="$(sed -n 's/^CMAKE_CXX_COMPILER:[A-Z]*=//p' "$dir/CMakeCache.txt" 2>/dev/null || true)"
  if [ -n "$cached" ] && [ "$(readlink -f "$cached")" != "$(readlink -f "$compiler")" ]; then
    rm -rf "$dir/CMakeCache.txt" "$dir/CMakeFiles"
  fi
}
