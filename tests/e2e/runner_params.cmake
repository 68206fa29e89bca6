# The registry and the runners agree: every bound, allowed value and format of every cell
# parameter, sent to the real dlbench-null and dlbench-torch through the protocol. Not timed, so
# it runs in parallel with other tests (label "runners", not "e2e").
dlbench_add_test(runner_params_test SOURCES ${CMAKE_CURRENT_LIST_DIR}/runner_params_test.cc
  DEPS dlbench::plan dlbench::orchestrator dlbench::protocol dlbench::common LABELS runners)
add_dependencies(runner_params_test dlbench-null)
if(TARGET dlbench-torch)
  target_compile_definitions(runner_params_test PRIVATE DLBENCH_HAVE_TORCH_RUNNER=1)
  target_include_directories(runner_params_test PRIVATE ${PROJECT_SOURCE_DIR}/runners/torch)
  target_link_libraries(runner_params_test PRIVATE dlbench::torch_cell)
  add_dependencies(runner_params_test dlbench-torch)
endif()
