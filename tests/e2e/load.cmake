# End-to-end tests of inference under load (docs/load.md) through the real dlbench binary: the
# load keys' rules and `plan`'s minimum query counts.
dlbench_add_test(load_e2e_test SOURCES ${CMAKE_CURRENT_LIST_DIR}/load_e2e_test.cc
  DEPS dlbench::common LABELS e2e)
add_dependencies(load_e2e_test dlbench)
