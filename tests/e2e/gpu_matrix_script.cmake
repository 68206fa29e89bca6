# scripts/gpu-matrix.sh, driven with pretend GPUs and the null runner (no GPU needed).
add_test(NAME GpuMatrixScript.ShardsResumesAndNamesABrokenBuild
         COMMAND bash ${CMAKE_CURRENT_LIST_DIR}/gpu_matrix_script.sh ${PROJECT_SOURCE_DIR} ${CMAKE_BINARY_DIR})
set_tests_properties(GpuMatrixScript.ShardsResumesAndNamesABrokenBuild PROPERTIES LABELS e2e RUN_SERIAL TRUE TIMEOUT 300)
