# End to end with the torch runner's input pipeline: `dlbench run` over data sources and workers,
# on a JPEG folder and TFRecords the test writes, corrupt ones included.
if(TARGET dlbench-torch AND TARGET dlbench AND TARGET dlbench::store AND TARGET dlbench::torch_data_core)
  dlbench_add_test(torch_data_e2e_test SOURCES ${CMAKE_CURRENT_LIST_DIR}/torch_data_e2e_test.cc
    DEPS dlbench::store dlbench::common dlbench::torch_data_core LABELS e2e torch)
  add_dependencies(torch_data_e2e_test dlbench dlbench-torch)
endif()
