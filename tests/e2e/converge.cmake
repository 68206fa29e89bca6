# End to end with scenario: converge: `dlbench run` trains Fashion-MNIST's reference CNN to a
# target through dlbench-torch, an unreachable target ends "not reached", and the same seed gives
# the same curves (docs/convergence.md).
if(TARGET dlbench-torch AND TARGET dlbench AND TARGET dlbench::store)
  dlbench_add_test(converge_e2e_test SOURCES ${CMAKE_CURRENT_LIST_DIR}/converge_e2e_test.cc
    DEPS dlbench::store dlbench::common dlbench::tfrecord LABELS e2e torch)
  add_dependencies(converge_e2e_test dlbench dlbench-torch)
endif()
