#!/usr/bin/env bash
# Installs what tenfold's build, tests, examples and benchmarks need, from Debian 12's packages.
# The one list of dependencies: .ci/run, scripts/test.sh and scripts/run_example.sh all use it.
#   scripts/install_deps.sh              apt-get update, then install the list (CI: a fresh machine)
#   scripts/install_deps.sh --if-missing install only if a package is missing (no root needed otherwise)
#   scripts/install_deps.sh --list       print the list
set -euo pipefail

packages=(
  g++ cmake ninja-build                                      # toolchain
  libxsimd-dev libboost-dev                                  # the library: xsimd, Boost.Hana (headers only)
  catch2                                                     # tests
  libeigen3-dev xtensor-dev libopenblas-dev libbenchmark-dev # benchmarks only: peers, Google Benchmark,
  python3                                                    # and bench/report.py (standard library only)
)

case "${1:-}" in
  --list)
    printf '%s\n' "${packages[@]}"
    exit 0
    ;;
  --if-missing)
    if ! command -v dpkg-query >/dev/null; then
      echo "install_deps.sh: not a Debian system; make sure these (or your system's equivalents) are installed:" >&2
      echo "  ${packages[*]}" >&2
      exit 0
    fi
    missing=()
    for p in "${packages[@]}"; do
      dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
    done
    [[ ${#missing[@]} -eq 0 ]] && exit 0
    echo "install_deps.sh: installing ${missing[*]}"
    ;;
  "") ;;
  *)
    echo "usage: $0 [--if-missing|--list]" >&2
    exit 2
    ;;
esac

sudo=()
if [[ $(id -u) -ne 0 ]]; then sudo=(sudo); fi
log=$(mktemp)
trap 'rm -f "$log"' EXIT
export DEBIAN_FRONTEND=noninteractive
# Quiet unless something fails; then the whole apt log is shown.
if ! { "${sudo[@]}" apt-get update -qq && "${sudo[@]}" apt-get install -y -qq --no-install-recommends "${packages[@]}"; } \
  >"$log" 2>&1; then
  cat "$log" >&2
  echo "install_deps.sh: apt-get failed" >&2
  exit 1
fi
echo "install_deps.sh: installed ${packages[*]}"
