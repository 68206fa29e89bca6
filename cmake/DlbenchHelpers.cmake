# dlbench::warnings: the compiler warnings every dlbench target is built with, in one place. Link
# it PRIVATE (dlbench_add_library and dlbench_add_test do); it adds no flags to dependants.
# -DDLBENCH_WERROR=ON turns every warning into an error (off by default: GCC 12 warns
# -Wmaybe-uninitialized inside nlohmann/json's headers at -O2).
option(DLBENCH_WERROR "Treat compiler warnings in dlbench's own code as errors" OFF)
add_library(dlbench_warnings INTERFACE)
add_library(dlbench::warnings ALIAS dlbench_warnings)
target_compile_options(dlbench_warnings INTERFACE -Wall -Wextra -Wno-missing-field-initializers
                       $<$<BOOL:${DLBENCH_WERROR}>:-Werror>)

# dlbench_add_library(NAME SOURCES ... DEPS ...): the library dlbench_NAME with alias dlbench::NAME.
function(dlbench_add_library name)
  cmake_parse_arguments(ARG "" "" "SOURCES;DEPS;PRIVATE_DEPS" ${ARGN})
  add_library(dlbench_${name} STATIC ${ARG_SOURCES})
  add_library(dlbench::${name} ALIAS dlbench_${name})
  target_include_directories(dlbench_${name} PUBLIC ${PROJECT_SOURCE_DIR}/src)
  target_link_libraries(dlbench_${name} PUBLIC ${ARG_DEPS} PRIVATE ${ARG_PRIVATE_DEPS} dlbench::warnings)
  set_target_properties(dlbench_${name} PROPERTIES POSITION_INDEPENDENT_CODE ON)
endfunction()

# Test binaries' own sources are compiled for a quick build, not for speed: what they test (the
# libraries and programs they link or start) keeps the build type's flags. On the 2-core machine
# -Og -g1 compiles a test file in about 40% of the time of -O2 -g (cli_e2e_test.cc 73 -> 29 s,
# store_suite_test.cc 135 -> 51 s under the same load), and test files are nearly half of the
# build's compile time; docs/testing.md has the figures. Empty: the build type's flags.
set(DLBENCH_TEST_COMPILE_OPTIONS "-Og;-g1" CACHE STRING "Compile options for test binaries' own sources")

# dlbench_add_test(NAME SOURCES ... DEPS ... [LABELS ...] [FIXTURES ...]): a GoogleTest binary
# registered with CTest. Each TEST() becomes its own CTest entry (gtest_discover_tests), so failures
# are named. FIXTURES are CTest fixtures every entry requires (e.g. "postgres", the throwaway
# PostgreSQL cluster of tests/e2e/postgres.cmake), so `ctest -R` of one test still sets them up.
function(dlbench_add_test name)
  if(NOT DLBENCH_BUILD_TESTS)
    return()
  endif()
  cmake_parse_arguments(ARG "" "" "SOURCES;DEPS;LABELS;FIXTURES" ${ARGN})
  add_executable(${name} ${ARG_SOURCES})
  target_link_libraries(${name} PRIVATE ${ARG_DEPS} GTest::gtest GTest::gtest_main GTest::gmock dlbench::warnings)
  set_target_properties(${name} PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/tests)
  target_compile_options(${name} PRIVATE ${DLBENCH_TEST_COMPILE_OPTIONS})
  target_compile_definitions(${name} PRIVATE
    DLBENCH_SOURCE_DIR="${PROJECT_SOURCE_DIR}" DLBENCH_BIN_DIR="${CMAKE_BINARY_DIR}/bin")
  include(GoogleTest)
  set(labels unit)
  if(ARG_LABELS)
    set(labels ${ARG_LABELS})
  endif()
  # A list property inside PROPERTIES must keep its semicolons escaped, or only the first survives.
  string(REPLACE ";" "\\;" labels_escaped "${labels}")
  # End-to-end tests time real processes (busy-waiting runners, real models): run them alone so
  # a neighbouring test on the 2-core CI machine does not stretch their steps. The Slurm tests each
  # start a Slurm of their own, whose first job id, and so the group's port derived from it, is the
  # same in every one: two at once joined each other's groups (session 16's CI).
  set(serial FALSE)
  if("e2e" IN_LIST labels OR "torch" IN_LIST labels OR "slurm" IN_LIST labels)
    set(serial TRUE)
  endif()
  set(fixture_properties "")
  if(ARG_FIXTURES)
    string(REPLACE ";" "\\;" fixtures_escaped "${ARG_FIXTURES}")
    set(fixture_properties FIXTURES_REQUIRED "${fixtures_escaped}")
  endif()
  gtest_discover_tests(${name} DISCOVERY_TIMEOUT 60
    PROPERTIES LABELS "${labels_escaped}" RUN_SERIAL ${serial} ${fixture_properties})
endfunction()
