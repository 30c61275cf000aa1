# Compares README.md's op list with what op_list prints (or, with -DUPDATE=ON, rewrites it):
#   cmake -DOP_LIST=<op_list executable> -DREADME=<README.md> [-DUPDATE=ON] -P check_op_list.cmake
cmake_minimum_required(VERSION 3.25)

execute_process(COMMAND ${OP_LIST} OUTPUT_VARIABLE generated RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "${OP_LIST} failed (${rc})")
endif()

set(begin_marker "<!-- ops:begin -->\n")
set(end_marker "<!-- ops:end -->")
file(READ ${README} readme)
string(FIND "${readme}" "${begin_marker}" begin)
string(FIND "${readme}" "${end_marker}" end)
if(begin EQUAL -1 OR end EQUAL -1 OR end LESS begin)
  message(FATAL_ERROR "${README}: no op list section (a line '<!-- ops:begin -->', then '<!-- ops:end -->')")
endif()
string(LENGTH "${begin_marker}" marker_length)
math(EXPR first "${begin} + ${marker_length}")
math(EXPR length "${end} - ${first}")
string(SUBSTRING "${readme}" ${first} ${length} current)

if(current STREQUAL generated)
  message(STATUS "README.md's op list matches the op table")
elseif(UPDATE)
  string(SUBSTRING "${readme}" 0 ${first} head)
  string(SUBSTRING "${readme}" ${end} -1 tail)
  file(WRITE ${README} "${head}${generated}${tail}")
  message(STATUS "Rewrote the op list in ${README}")
else()
  message(FATAL_ERROR "README.md's op list differs from the op table (ops/table.hpp).\n"
                      "README.md has:\n${current}\nop_list prints:\n${generated}\n"
                      "Run `cmake --build <build dir> --target update_readme_op_list` to rewrite it.")
endif()
