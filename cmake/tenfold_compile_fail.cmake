# Compile-fail tests: a misuse of tenfold must be a compile error whose message a user understands.
#
# tenfold_compile_fail(name source regex) adds two CTests (label "compile_fail") for
# tests/compile_fail/<source>:
#   compile_fail:<name>          runs the compiler with -fsyntax-only and passes only if its output matches
#                                `regex` (PASS_REGULAR_EXPRESSION: the exit status is not looked at; a clean
#                                compile prints nothing, so it fails).
#   compile_fail:<name>:control  compiles the same file with -DTENFOLD_COMPILE_FAIL_CONTROL, where the source
#                                swaps its one bad line for a valid one; it must compile cleanly and must not
#                                print `regex`. This proves the regex catches the intended misuse and nothing
#                                else in the file (so every source needs that #ifdef).
# The regex is matched against the whole output (`.` also matches newlines in CMake regexes), so one regex
# can require the static_assert's message and the shapes in the compiler's note: GCC prints the note
# ("In instantiation of check_x<shape<...>, ...>") before the error line. Avoid ';' (a CMake list separator)
# and quote characters (the compiler's quotes depend on the locale).
#
# Every test reads tenfold.hpp through one precompiled header (target compile_fail_pch, built with the
# tests): parsing the library is ~90% of a test's 2 s, and there are ~80 of them. The tests pass the same
# -include whether or not the .gch exists: without it (or if its flags went stale) GCC reads the header's
# text instead, so a test never depends on the PCH for its result, only for its speed.

# The compiler and the flags every compile-fail compile shares (the PCH's and the tests').
set(TENFOLD_COMPILE_FAIL_FLAGS -std=c++20 -fdiagnostics-color=never)
if(TENFOLD_NATIVE)
  list(APPEND TENFOLD_COMPILE_FAIL_FLAGS -march=${TENFOLD_MARCH})
endif()
foreach(target tenfold Boost::headers) # the library's include directories (its own, xsimd's) and Hana's
  set(dirs "$<TARGET_PROPERTY:${target},INTERFACE_INCLUDE_DIRECTORIES>")
  list(APPEND TENFOLD_COMPILE_FAIL_FLAGS "$<$<BOOL:${dirs}>:-I$<JOIN:${dirs},$<SEMICOLON>-I>>")
endforeach()

set(TENFOLD_COMPILE_FAIL_PCH "${CMAKE_BINARY_DIR}/compile_fail_pch/tenfold_compile_fail.hpp")
file(WRITE "${TENFOLD_COMPILE_FAIL_PCH}.in" "#include <tenfold/tenfold.hpp>\n")
configure_file("${TENFOLD_COMPILE_FAIL_PCH}.in" "${TENFOLD_COMPILE_FAIL_PCH}" COPYONLY) # unchanged: no rebuild
file(GLOB_RECURSE tenfold_compile_fail_headers CONFIGURE_DEPENDS "${PROJECT_SOURCE_DIR}/include/tenfold/*.hpp")
add_custom_command(
  OUTPUT "${TENFOLD_COMPILE_FAIL_PCH}.gch"
  COMMAND ${CMAKE_CXX_COMPILER} ${TENFOLD_COMPILE_FAIL_FLAGS} -x c++-header "${TENFOLD_COMPILE_FAIL_PCH}"
          -o "${TENFOLD_COMPILE_FAIL_PCH}.gch"
  DEPENDS "${TENFOLD_COMPILE_FAIL_PCH}" ${tenfold_compile_fail_headers}
  COMMENT "Precompiling tenfold.hpp for the compile-fail tests"
  COMMAND_EXPAND_LISTS VERBATIM)
add_custom_target(compile_fail_pch ALL DEPENDS "${TENFOLD_COMPILE_FAIL_PCH}.gch")

function(tenfold_compile_fail name source regex)
  set(src "${PROJECT_SOURCE_DIR}/tests/compile_fail/${source}")
  if(NOT EXISTS "${src}")
    message(FATAL_ERROR "tenfold_compile_fail(${name}): no such file ${src}")
  endif()
  set(compile ${CMAKE_CXX_COMPILER} ${TENFOLD_COMPILE_FAIL_FLAGS} -fsyntax-only -include "${TENFOLD_COMPILE_FAIL_PCH}")

  add_test(NAME compile_fail:${name} COMMAND ${compile} "${src}" COMMAND_EXPAND_LISTS)
  set_tests_properties(compile_fail:${name} PROPERTIES PASS_REGULAR_EXPRESSION "${regex}" LABELS "compile_fail")

  add_test(NAME compile_fail:${name}:control COMMAND ${compile} -DTENFOLD_COMPILE_FAIL_CONTROL "${src}"
           COMMAND_EXPAND_LISTS)
  set_tests_properties(compile_fail:${name}:control PROPERTIES FAIL_REGULAR_EXPRESSION "${regex}" LABELS "compile_fail")
endfunction()
