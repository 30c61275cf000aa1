# Flags shared by the project's own executables (tests, examples, benchmarks). The library itself
# imposes nothing but C++20: users choose their ISA.
function(tenfold_target_defaults target)
  target_link_libraries(${target} PRIVATE tenfold::tenfold)
  # No -Wno flags for the headers: they are clean under -Wall -Wextra (the consumer:warnings tests hold
  # them to it). -Wno-unused-parameter is for the tests' and examples' own code.
  target_compile_options(${target} PRIVATE -Wall -Wextra -Wno-unused-parameter)
  if(TENFOLD_NATIVE)
    target_compile_options(${target} PRIVATE -march=native)
  endif()
  if(TENFOLD_SANITIZE)
    target_compile_options(${target} PRIVATE -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=all)
    target_link_options(${target} PRIVATE -fsanitize=address,undefined)
  endif()
endfunction()
