# One runner process serving several cells (`dlbench run --runner-reuse`, docs/adr/0011-runner-reuse.md):
# the null runner in virtual time, and two tiny dlbench-torch cells on the CPU when LibTorch is built.
if(TARGET dlbench AND TARGET dlbench::store)
  dlbench_add_test(reuse_e2e_test SOURCES ${CMAKE_CURRENT_LIST_DIR}/reuse_e2e_test.cc
    DEPS dlbench::store dlbench::record dlbench::common SQLite::SQLite3 LABELS e2e)
  add_dependencies(reuse_e2e_test dlbench dlbench-null)
  if(TARGET dlbench-torch)
    target_compile_definitions(reuse_e2e_test PRIVATE DLBENCH_HAVE_TORCH_RUNNER=1)
    add_dependencies(reuse_e2e_test dlbench-torch)
  endif()
endif()
