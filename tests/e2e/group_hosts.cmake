# A group run under torchrun (no --shard) with the monitor on: every task's host monitored, and an
# idle task outlasting the silence limit by its beats, on one host and on two network namespaces
# (root only). Virtual-time null cells, so no LibTorch build; skipped when torchrun is not installed.
dlbench_add_test(group_hosts_e2e_test SOURCES ${CMAKE_CURRENT_LIST_DIR}/group_hosts_e2e_test.cc
  DEPS dlbench::store dlbench::common LABELS e2e)
add_dependencies(group_hosts_e2e_test dlbench dlbench-null)
