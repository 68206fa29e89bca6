# A real Slurm (Debian's slurm-wlm and munge, started by the test in a temporary folder): `srun -n 2
# dlbench run --shard auto` runs each cell once over the two tasks (slurm_e2e_test); without
# --shard the tasks run the matrix once as a group (slurm_group_e2e_test), and a group survives a
# rank or a task that fails (slurm_group_faults_e2e_test). Label `slurm`; skipped (with the reason)
# when not root or when Slurm is not installed. Not labelled e2e: the sanitizer stages
# (ctest -L 'unit|e2e') leave them to the suite stage, which runs every test.
foreach(slurm_test slurm_e2e_test slurm_group_e2e_test slurm_group_faults_e2e_test)
  dlbench_add_test(${slurm_test} SOURCES ${CMAKE_CURRENT_LIST_DIR}/${slurm_test}.cc
    DEPS dlbench::store dlbench::common LABELS slurm)
  add_dependencies(${slurm_test} dlbench dlbench-null)
endforeach()

# torchrun (python3-torch 1.13's) starting two `dlbench run --shard auto`; skipped when torchrun is
# not installed. Its cells are virtual-time null cells, so it needs no LibTorch build.
dlbench_add_test(torchrun_e2e_test SOURCES ${CMAKE_CURRENT_LIST_DIR}/torchrun_e2e_test.cc
  DEPS dlbench::store dlbench::common LABELS e2e)
add_dependencies(torchrun_e2e_test dlbench dlbench-null)

# A group run under torchrun (no --shard): dlbench-torch Gloo ranks, one per torchrun task, first on
# this host and then on two hosts made of network namespaces (root only); rank 0 stores the run.
if(TARGET dlbench-torch)
  dlbench_add_test(torchrun_group_e2e_test SOURCES ${CMAKE_CURRENT_LIST_DIR}/torchrun_group_e2e_test.cc
    DEPS dlbench::store dlbench::common LABELS e2e torch)
  add_dependencies(torchrun_group_e2e_test dlbench dlbench-torch)
endif()
