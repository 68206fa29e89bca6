# The Python client's pytest suite (clients/python/tests), one CTest entry per test file, driving
# the real dlbench binary in ${CMAKE_BINARY_DIR}/bin. The interpreter is Debian's /usr/bin/python3
# where present (python3-torch, python3-pytest and friends install for it), else python3 on PATH;
# DLBENCH_PYTHON overrides.
if(TARGET dlbench AND DLBENCH_BUILD_TESTS)
  if(EXISTS /usr/bin/python3)
    set(_dlbench_python_default /usr/bin/python3)
  else()
    find_program(_dlbench_python_default NAMES python3)
  endif()
  set(DLBENCH_PYTHON "${_dlbench_python_default}" CACHE FILEPATH "Python interpreter of the client's tests")
  set(_py_dir ${PROJECT_SOURCE_DIR}/clients/python)
  # name | test file | labels | timeout (s)
  set(_py_tests
    "Wire|test_wire.py|unit|120"
    "Session|test_session.py|e2e|300"
    "Package|test_package.py|e2e|300"
    "DlbenchE2E|test_dlbench_e2e.py|e2e|300"
    "Reuse|test_reuse.py|e2e|300"
    "Load|test_load.py|e2e|300"
    "TorchRunner|test_torch_runner.py|e2e,torch|600"
    "OtherFrameworks|test_other_frameworks.py|e2e|300"
    "Peers|test_peers.py|e2e,torch|600"
    "Docs|test_docs.py|unit|120")
  foreach(_entry ${_py_tests})
    string(REPLACE "|" ";" _fields "${_entry}")
    list(GET _fields 0 _name)
    list(GET _fields 1 _file)
    list(GET _fields 2 _labels)
    list(GET _fields 3 _timeout)
    string(REPLACE "," ";" _labels "${_labels}")
    add_test(NAME PythonClient.${_name}
             COMMAND ${DLBENCH_PYTHON} -m pytest -q -p no:cacheprovider tests/${_file}
             WORKING_DIRECTORY ${_py_dir})
    set_tests_properties(PythonClient.${_name} PROPERTIES
      LABELS "${_labels}" TIMEOUT ${_timeout} RUN_SERIAL TRUE
      ENVIRONMENT "DLBENCH_BIN_DIR=${CMAKE_BINARY_DIR}/bin;PYTHONDONTWRITEBYTECODE=1")
  endforeach()
endif()
