# Measuring a disturbed cell again (measure.retry_disturbed, docs/measurement.md "Measuring again"):
# the null runner in virtual time, shifting its step time on the attempts it is told to.
if(TARGET dlbench AND TARGET dlbench::store)
  dlbench_add_test(retry_e2e_test SOURCES ${CMAKE_CURRENT_LIST_DIR}/retry_e2e_test.cc
    DEPS dlbench::store dlbench::record dlbench::common SQLite::SQLite3 LABELS e2e)
  add_dependencies(retry_e2e_test dlbench dlbench-null)
endif()
