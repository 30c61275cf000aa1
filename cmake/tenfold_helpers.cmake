include(${CMAKE_CURRENT_LIST_DIR}/tenfold_machine.cmake)
tenfold_detect_machine()

# Flags shared by the project's own executables (tests, examples, benchmarks). The library itself
# imposes nothing but C++20: users choose their ISA.
function(tenfold_target_defaults target)
  target_link_libraries(${target} PRIVATE tenfold::tenfold)
  # No -Wno flags for the headers: they are clean under -Wall -Wextra (the consumer:warnings tests hold
  # them to it). -Wno-unused-parameter is for the tests' and examples' own code.
  target_compile_options(${target} PRIVATE -Wall -Wextra -Wno-unused-parameter)
  if(TENFOLD_NATIVE)
    target_compile_options(${target} PRIVATE -march=${TENFOLD_MARCH})
    # This machine's caches and cores: the key of the tuned tables (cmake/tenfold_machine.cmake).
    target_compile_definitions(${target} PRIVATE ${TENFOLD_MACHINE_DEFINITIONS})
  endif()
  if(TENFOLD_SANITIZE)
    target_compile_options(${target} PRIVATE -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=all)
    target_link_options(${target} PRIVATE -fsanitize=address,undefined)
  endif()
endfunction()

# utf8proc (io/wordpiece.hpp's Unicode data): Debian's libutf8proc-dev ships no CMake package and a
# pkg-config file with a wrong version, so the header and the library are looked for directly. Sets
# TENFOLD_UTF8PROC_INCLUDE_DIR and TENFOLD_UTF8PROC_LIBRARY (cached), or stops with what to install.
function(tenfold_find_utf8proc)
  find_path(TENFOLD_UTF8PROC_INCLUDE_DIR utf8proc.h)
  find_library(TENFOLD_UTF8PROC_LIBRARY utf8proc)
  if(NOT TENFOLD_UTF8PROC_INCLUDE_DIR OR NOT TENFOLD_UTF8PROC_LIBRARY)
    message(FATAL_ERROR "tenfold: utf8proc not found (Debian: libutf8proc-dev; scripts/install_deps.sh installs it)")
  endif()
endfunction()
