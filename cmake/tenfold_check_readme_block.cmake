# Checks that a C++ block of README.md appears, line for line, in a source file that compiles it:
#   cmake -DREADME=<README.md> -DSOURCE=<file.cpp> [-DMARK=user-op] -P tenfold_check_readme_block.cmake
# The README's block is the ```cpp fence after `<!-- MARK:begin -->` (up to `<!-- MARK:end -->`); the
# source's is between the lines `// readme:begin` and `// readme:end`. (The tests docs:readme_*.)
cmake_minimum_required(VERSION 3.25)

if(NOT DEFINED MARK)
  set(MARK user-op)
endif()
file(READ ${README} readme)
file(READ ${SOURCE} source)
if(NOT readme MATCHES "<!-- ${MARK}:begin -->\n```cpp\n(.*)```\n<!-- ${MARK}:end -->")
  message(FATAL_ERROR "${README}: no ```cpp block between <!-- ${MARK}:begin --> and <!-- ${MARK}:end -->")
endif()
set(in_readme "${CMAKE_MATCH_1}")
if(NOT source MATCHES "\n// readme:begin\n(.*)// readme:end\n")
  message(FATAL_ERROR "${SOURCE}: no lines between // readme:begin and // readme:end")
endif()
set(in_source "${CMAKE_MATCH_1}")
if(NOT in_readme STREQUAL in_source)
  message(FATAL_ERROR "README.md's ${MARK} example differs from ${SOURCE}, which compiles it "
                      "(between // readme:begin and // readme:end): edit both together.\n"
                      "README.md has:\n${in_readme}\n${SOURCE} has:\n${in_source}")
endif()
message(STATUS "README.md's ${MARK} example matches ${SOURCE}")
