# End to end with precisions (docs/precisions.md): `dlbench run` of a tiny BERT at fp32, int8 and
# bf16 on the CPU, and `dlbench show`'s precision trade-off table with the outputs compared with
# the fp32 cell's.
if(TARGET dlbench-torch AND TARGET dlbench AND TARGET dlbench::store)
  dlbench_add_test(precision_e2e_test SOURCES ${CMAKE_CURRENT_LIST_DIR}/precision_e2e_test.cc
    DEPS dlbench::store dlbench::report dlbench::common LABELS e2e torch)
  add_dependencies(precision_e2e_test dlbench dlbench-torch)
endif()
