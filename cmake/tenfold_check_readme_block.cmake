# Checks that a C++ block of README.md appears, line for line, in a source file that compiles it:
#   cmake -DREADME=<README.md> -DSOURCE=<file.cpp> [-DMARK=user-op] [-DSOURCE_MARK=name] -P tenfold_check_readme_block.cmake
# The README's block is the ```cpp fence after `<!-- MARK:begin -->` (up to `<!-- MARK:end -->`); the
# source's is between the lines `// readme:begin` and `// readme:end` (`// readme:name:begin` and
# `// readme:name:end` with SOURCE_MARK, for a second block in one file). (The tests docs:readme_*.)
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
set(source_mark "readme")
if(DEFINED SOURCE_MARK)
  set(source_mark "readme:${SOURCE_MARK}")
endif()
if(NOT source MATCHES "\n// ${source_mark}:begin\n(.*)// ${source_mark}:end\n")
  message(FATAL_ERROR "${SOURCE}: no lines between // ${source_mark}:begin and // ${source_mark}:end")
endif()
set(in_source "${CMAKE_MATCH_1}")
if(NOT in_readme STREQUAL in_source)
  message(FATAL_ERROR "README.md's ${MARK} example differs from ${SOURCE}, which compiles it "
                      "(between // ${source_mark}:begin and // ${source_mark}:end): edit both together.\n"
                      "README.md has:\n${in_readme}\n${SOURCE} has:\n${in_source}")
endif()
message(STATUS "README.md's ${MARK} example matches ${SOURCE}")
