# One consumer test (see CMakeLists.txt beside this file), run as
#   cmake -DMODE=<install|find_package|add_subdirectory|vendored|warnings> -DSOURCE_DIR=<tenfold> -DWORK_DIR=<dir>
#         -DGENERATOR=<generator> -DCXX_COMPILER=<c++> [-DMAKE_PROGRAM=<ninja/make>] [-DWORK_NAME=<subdir>]
#         -P run_consumer.cmake
# WORK_NAME (default: MODE) names the work directory, for one MODE run with several compilers.
# Every step starts from an empty directory, so nothing cached by an earlier run can hide a broken package.
cmake_minimum_required(VERSION 3.25)

function(run)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc COMMAND_ECHO STDOUT)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "consumer test '${MODE}': command failed (${rc}): ${ARGN}")
  endif()
endfunction()

set(configure_args -G "${GENERATOR}" -DCMAKE_CXX_COMPILER=${CXX_COMPILER} -DCMAKE_FIND_USE_PACKAGE_REGISTRY=OFF)
if(MAKE_PROGRAM)
  list(APPEND configure_args -DCMAKE_MAKE_PROGRAM=${MAKE_PROGRAM})
endif()
set(prefix ${WORK_DIR}/prefix)
if(NOT WORK_NAME)
  set(WORK_NAME ${MODE})
endif()
set(work ${WORK_DIR}/${WORK_NAME})
file(REMOVE_RECURSE ${work})

if(MODE STREQUAL "install")
  # What a user does to install tenfold: configure (tests and examples off), build, install to a prefix.
  file(REMOVE_RECURSE ${prefix})
  run(${CMAKE_COMMAND} -S ${SOURCE_DIR} -B ${work} ${configure_args} -DTENFOLD_BUILD_TESTS=OFF
      -DTENFOLD_BUILD_EXAMPLES=OFF -DTENFOLD_BUILD_BENCH=OFF)
  run(${CMAKE_COMMAND} --build ${work})
  run(${CMAKE_COMMAND} --install ${work} --prefix ${prefix})
  return()
elseif(MODE STREQUAL "find_package")
  set(consumer_args -DCMAKE_PREFIX_PATH=${prefix})
elseif(MODE STREQUAL "add_subdirectory")
  set(consumer_args -DTENFOLD_SOURCE_DIR=${SOURCE_DIR})
elseif(MODE STREQUAL "vendored")
  file(COPY ${SOURCE_DIR}/include DESTINATION ${work}/vendor) # vendoring is a copy of include/, nothing else
  set(consumer_args -DTENFOLD_VENDOR_DIR=${work}/vendor)
elseif(MODE STREQUAL "warnings")
  set(consumer_args -DTENFOLD_INCLUDE_DIR=${SOURCE_DIR}/include) # the checkout's own headers, not SYSTEM
else()
  message(FATAL_ERROR "run_consumer.cmake: unknown MODE '${MODE}'")
endif()

run(${CMAKE_COMMAND} -S ${SOURCE_DIR}/tests/consumers/${MODE} -B ${work}/build ${configure_args} ${consumer_args})
if(MODE STREQUAL "find_package")
  # The package must come from the prefix just installed, not from anywhere else on the machine.
  file(STRINGS ${work}/build/CMakeCache.txt found REGEX "^tenfold_DIR:")
  if(NOT found MATCHES "^tenfold_DIR:PATH=${prefix}/")
    message(FATAL_ERROR "find_package(tenfold) did not use ${prefix}: ${found}")
  endif()
endif()
run(${CMAKE_COMMAND} --build ${work}/build --config Debug)
foreach(exe ${work}/build/consumer ${work}/build/Debug/consumer) # single- or multi-config generator
  if(EXISTS ${exe})
    run(${exe})
    return()
  endif()
endforeach()
message(FATAL_ERROR "consumer test '${MODE}': no consumer executable under ${work}/build")
