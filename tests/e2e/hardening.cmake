# End-to-end tests of the driver's defences (issue 19): outputs that are not regular files, stores
# on read-only filesystems, `serve` on an address in use, terminal escapes, and the input bounds
# of docs/limits.md. The real dlbench binary and the null runner.
if(TARGET dlbench AND TARGET dlbench::store)
  dlbench_add_test(hardening_e2e_test SOURCES ${CMAKE_CURRENT_LIST_DIR}/hardening_e2e_test.cc
    DEPS dlbench::store dlbench::common LABELS e2e)
  add_dependencies(hardening_e2e_test dlbench dlbench-null)
endif()
