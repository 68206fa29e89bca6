# A real run's JSON export validates against docs/schema/export-v2.schema.json (Debian's
# python3-jsonschema; scripts/setup-debian.sh installs it).
if(TARGET dlbench AND TARGET dlbench-null)
  add_test(NAME ExportSchema.ARealRunsExportValidates
           COMMAND /usr/bin/python3 ${CMAKE_CURRENT_LIST_DIR}/export_schema_test.py ${PROJECT_SOURCE_DIR}
                   ${CMAKE_BINARY_DIR}/bin)
  set_tests_properties(ExportSchema.ARealRunsExportValidates PROPERTIES LABELS e2e RUN_SERIAL TRUE TIMEOUT 180)
endif()
