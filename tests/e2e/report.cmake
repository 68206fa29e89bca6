# End-to-end tests of the report module: the real dlbench binary (export, report, serve), a real
# headless Chromium (label "browser") and a real Prometheus server (label "prometheus"). The
# browser and Prometheus tests skip with a message when chromium/prometheus are not installed.
dlbench_add_test(report_e2e_test SOURCES ${CMAKE_CURRENT_LIST_DIR}/report_e2e_test.cc
  DEPS dlbench::store dlbench::common LABELS e2e)
add_dependencies(report_e2e_test dlbench dlbench-null)

dlbench_add_test(report_browser_test SOURCES ${CMAKE_CURRENT_LIST_DIR}/report_browser_test.cc
  DEPS dlbench::store dlbench::common LABELS browser)
add_dependencies(report_browser_test dlbench dlbench-null)

dlbench_add_test(report_prometheus_test SOURCES ${CMAKE_CURRENT_LIST_DIR}/report_prometheus_test.cc
  DEPS dlbench::store dlbench::common PkgConfig::DLBENCH_HTTPLIB LABELS prometheus)
add_dependencies(report_prometheus_test dlbench)
