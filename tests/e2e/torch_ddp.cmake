# End to end with data-parallel torch cells (docs/distributed.md): `dlbench run` launches two Gloo
# ranks of dlbench-torch on this host.
if(TARGET dlbench-torch AND TARGET dlbench AND TARGET dlbench::store)
  dlbench_add_test(torch_ddp_e2e_test SOURCES ${CMAKE_CURRENT_LIST_DIR}/torch_ddp_e2e_test.cc
    DEPS dlbench::store dlbench::common dlbench::orchestrator LABELS e2e torch)
  add_dependencies(torch_ddp_e2e_test dlbench dlbench-torch)
endif()
