# The command line as a newcomer meets it (issue 18): global options on either side of the
# subcommand, errors that name the subcommand, options that refuse an old unit, CI exit codes.
dlbench_add_test(cli_e2e_test SOURCES ${CMAKE_CURRENT_LIST_DIR}/cli_e2e_test.cc
  DEPS dlbench::store dlbench::common SQLite::SQLite3 LABELS e2e)
add_dependencies(cli_e2e_test dlbench dlbench-null)
