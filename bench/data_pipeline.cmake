# The torch runner's input pipeline (docs/input-pipeline.md): libjpeg-turbo decode at full and
# reduced DCT scale, and the pipeline's samples/s with 1, 2 and 4 workers on generated
# ImageNet-like JPEGs. Run: build/bin/dlbench-bench-data (figures in docs/benchmarks.md).
if(TARGET dlbench::torch_data)
  add_executable(dlbench-bench-data ${CMAKE_CURRENT_LIST_DIR}/data_pipeline_bench.cc)
  target_link_libraries(dlbench-bench-data PRIVATE dlbench::warnings dlbench::torch_data benchmark::benchmark)
endif()
