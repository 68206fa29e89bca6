# End-to-end checks that what the README and the docs show holds: the quickstart through the real
# binary and dlbench-torch (label torch: only where LibTorch was found), and text the docs quote
# from the null runner's output.
dlbench_add_test(docs_examples_e2e_test SOURCES ${CMAKE_CURRENT_LIST_DIR}/docs_examples_e2e_test.cc
  DEPS dlbench::store dlbench::common LABELS e2e)
add_dependencies(docs_examples_e2e_test dlbench dlbench-null)

if(TARGET dlbench-torch)
  dlbench_add_test(quickstart_e2e_test SOURCES ${CMAKE_CURRENT_LIST_DIR}/quickstart_e2e_test.cc
    DEPS dlbench::orchestrator dlbench::common LABELS e2e torch)
  add_dependencies(quickstart_e2e_test dlbench dlbench-torch)
endif()

# deploy/kubernetes/dlbench-sweep.yaml: its shard numbering and its matrix, checked without a cluster.
dlbench_add_test(deploy_e2e_test SOURCES ${CMAKE_CURRENT_LIST_DIR}/deploy_e2e_test.cc
  DEPS dlbench::common yaml-cpp LABELS e2e)
add_dependencies(deploy_e2e_test dlbench)
