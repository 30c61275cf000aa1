# Sourced by the bench/run_*.sh scripts that time OpenBLAS: makes sure OpenBLAS runs the kernels this
# CPU can run. Debian's OpenBLAS 0.3.21 picks its kernels from the CPU's family and model, and on a CPU
# it does not know (seen: Intel family 6 model 207 under KVM, 2026-12-08) it falls back to "Prescott",
# its SSE3 kernels, ~5x slower than its AVX-512 ones: a peer at a fifth of its speed flatters every
# ratio. Where OPENBLAS_CORETYPE is unset and OpenBLAS would choose a pre-AVX2 core on a CPU with
# AVX-512 or AVX2, this exports OPENBLAS_CORETYPE=SkylakeX (AVX-512) or Haswell (AVX2 + FMA).
#   openblas_core BINARY     BINARY: a program linked to OpenBLAS that accepts --benchmark_list_tests
openblas_core() {
  local core flags
  if [[ -z ${OPENBLAS_CORETYPE:-} ]]; then
    core=$(OPENBLAS_VERBOSE=2 "$1" --benchmark_list_tests 2>&1 | sed -n 's/^Core: //p' | head -n 1)
    flags=$(grep -m 1 '^flags' /proc/cpuinfo)
    case $core in
      Prescott | Core2 | Penryn | Dunnington | Nehalem | Atom | Katmai | Coppermine | Northwood | Banias)
        if [[ $flags == *" avx512f "* ]]; then
          export OPENBLAS_CORETYPE=SkylakeX
        elif [[ $flags == *" avx2 "* && $flags == *" fma "* ]]; then
          export OPENBLAS_CORETYPE=Haswell
        fi
        [[ -n ${OPENBLAS_CORETYPE:-} ]] &&
          echo "openblas_core.sh: OpenBLAS would run its $core kernels on this CPU; OPENBLAS_CORETYPE=$OPENBLAS_CORETYPE" >&2
        ;;
    esac
  fi
  echo "OpenBLAS core: $(OPENBLAS_VERBOSE=2 "$1" --benchmark_list_tests 2>&1 | sed -n 's/^Core: //p' | head -n 1)" >&2
}
