# Flags shared by the project's own executables (tests, examples, benchmarks). The library itself
# imposes nothing but C++20: users choose their ISA.
function(tenfold_target_defaults target)
  target_link_libraries(${target} PRIVATE tenfold::tenfold)
  target_compile_options(${target} PRIVATE -Wall -Wextra -Wno-unused-parameter)
  if(CMAKE_CXX_COMPILER_ID STREQUAL "GNU" AND CMAKE_CXX_COMPILER_VERSION VERSION_LESS 13)
    # GCC 12 false positives: -Wrestrict in libstdc++'s string concatenation, -W(maybe-)uninitialized
    # on the AVX-512 intrinsics' _mm512_undefined_* (GCC bug 105593), and -Waggressive-loop-optimizations
    # on loops whose bound it cannot see is far below the overflow point.
    target_compile_options(${target} PRIVATE -Wno-restrict -Wno-uninitialized -Wno-maybe-uninitialized
                                             -Wno-aggressive-loop-optimizations)
  endif()
  if(TENFOLD_NATIVE)
    target_compile_options(${target} PRIVATE -march=native)
  endif()
  if(TENFOLD_SANITIZE)
    target_compile_options(${target} PRIVATE -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=all)
    target_link_options(${target} PRIVATE -fsanitize=address,undefined)
  endif()
endfunction()
