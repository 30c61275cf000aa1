# Checks that a C++ block of README.md appears, line for line, in a source file that compiles it:
#   cmake -DREADME=<README.md> -DSOURCE=<file.cpp> -P tenfold_check_readme_block.cmake
# The README's block is the ```cpp fence after `<!-- user-op:begin -->` (up to `<!-- user-op:end -->`); the
# source's is between the lines `// readme:begin` and `// readme:end`. (The test docs:readme_user_op.)
cmake_minimum_required(VERSION 3.25)

file(READ ${README} readme)
file(READ ${SOURCE} source)
if(NOT readme MATCHES "<!-- user-op:begin -->\n```cpp\n(.*)```\n<!-- user-op:end -->")
  message(FATAL_ERROR "${README}: no ```cpp block between <!-- user-op:begin --> and <!-- user-op:end -->")
endif()
set(in_readme "${CMAKE_MATCH_1}")
if(NOT source MATCHES "\n// readme:begin\n(.*)// readme:end\n")
  message(FATAL_ERROR "${SOURCE}: no lines between // readme:begin and // readme:end")
endif()
set(in_source "${CMAKE_MATCH_1}")
if(NOT in_readme STREQUAL in_source)
  message(FATAL_ERROR "README.md's \"Defining your own op\" example differs from ${SOURCE}, which compiles it "
                      "(between // readme:begin and // readme:end): edit both together.\n"
                      "README.md has:\n${in_readme}\n${SOURCE} has:\n${in_source}")
endif()
message(STATUS "README.md's user-op example matches ${SOURCE}")
