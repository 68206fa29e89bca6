# End to end with the LibTorch runner: `dlbench run` stores results for all four reference models.
if(TARGET dlbench-torch AND TARGET dlbench AND TARGET dlbench::store)
  dlbench_add_test(torch_e2e_test SOURCES ${CMAKE_CURRENT_LIST_DIR}/torch_e2e_test.cc
    DEPS dlbench::store dlbench::common LABELS e2e torch)
  add_dependencies(torch_e2e_test dlbench dlbench-torch)
endif()
