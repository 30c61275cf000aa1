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
function(tenfold_compile_fail name source regex)
  set(src "${PROJECT_SOURCE_DIR}/tests/compile_fail/${source}")
  if(NOT EXISTS "${src}")
    message(FATAL_ERROR "tenfold_compile_fail(${name}): no such file ${src}")
  endif()
  # The library's include directories (its own, xsimd's) and Hana's, as -I flags.
  set(compile ${CMAKE_CXX_COMPILER} -std=c++20 -fsyntax-only -fdiagnostics-color=never)
  if(TENFOLD_NATIVE)
    list(APPEND compile -march=${TENFOLD_MARCH})
  endif()
  foreach(target tenfold Boost::headers)
    set(dirs "$<TARGET_PROPERTY:${target},INTERFACE_INCLUDE_DIRECTORIES>")
    list(APPEND compile "$<$<BOOL:${dirs}>:-I$<JOIN:${dirs},$<SEMICOLON>-I>>")
  endforeach()

  add_test(NAME compile_fail:${name} COMMAND ${compile} "${src}" COMMAND_EXPAND_LISTS)
  set_tests_properties(compile_fail:${name} PROPERTIES PASS_REGULAR_EXPRESSION "${regex}" LABELS "compile_fail")

  add_test(NAME compile_fail:${name}:control COMMAND ${compile} -DTENFOLD_COMPILE_FAIL_CONTROL "${src}"
           COMMAND_EXPAND_LISTS)
  set_tests_properties(compile_fail:${name}:control PROPERTIES FAIL_REGULAR_EXPRESSION "${regex}" LABELS "compile_fail")
endfunction()
