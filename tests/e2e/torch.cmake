# End to end with the LibTorch runner: `dlbench run` stores results for all four reference models.
# Only when LibTorch was found (the top-level CMakeLists.txt says so at configure time).
if(TARGET dlbench-torch)
  dlbench_add_test(torch_e2e_test SOURCES ${CMAKE_CURRENT_LIST_DIR}/torch_e2e_test.cc
    DEPS dlbench::store dlbench::config dlbench::common LABELS e2e torch)
  add_dependencies(torch_e2e_test dlbench dlbench-torch)
endif()
