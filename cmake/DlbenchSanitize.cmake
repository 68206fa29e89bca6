# Sanitizer and fuzzing builds (docs/testing.md). Both apply to the whole build: a sanitizer must
# see every translation unit (ThreadSanitizer reports races in uninstrumented code as its own,
# AddressSanitizer misses what it does not instrument), so these are the project's only
# directory-wide flags, and only when asked for.
#
#   -DDLBENCH_SANITIZE=address,undefined   AddressSanitizer + UndefinedBehaviorSanitizer
#   -DDLBENCH_SANITIZE=thread              ThreadSanitizer
#   -DDLBENCH_FUZZ=ON                      clang only: coverage for libFuzzer plus ASan and UBSan;
#                                          builds the fuzz_<target> binaries (fuzz/CMakeLists.txt)
set(DLBENCH_SANITIZE "" CACHE STRING "Sanitizers for the whole build: address,undefined or thread (empty: none)")
option(DLBENCH_FUZZ "Build the libFuzzer targets in fuzz/ (clang only; implies address,undefined)" OFF)

if(DLBENCH_FUZZ)
  if(NOT CMAKE_CXX_COMPILER_ID STREQUAL "Clang")
    message(FATAL_ERROR "DLBENCH_FUZZ needs clang (libFuzzer): configure with -DCMAKE_CXX_COMPILER=clang++ "
                        "-DCMAKE_C_COMPILER=clang (Debian: clang, libclang-rt-14-dev)")
  endif()
  if(DLBENCH_SANITIZE AND NOT DLBENCH_SANITIZE STREQUAL "address,undefined")
    message(FATAL_ERROR "DLBENCH_FUZZ builds with address,undefined; it does not combine with ${DLBENCH_SANITIZE}")
  endif()
  set(DLBENCH_SANITIZE "address,undefined")
  # Coverage instrumentation everywhere; the fuzzer's main() is linked into fuzz_<target> only.
  add_compile_options(-fsanitize=fuzzer-no-link)
endif()

if(DLBENCH_SANITIZE)
  if(DLBENCH_SANITIZE STREQUAL "address,undefined")
    # float-cast-overflow: a double too large for the integer it is converted to (gcc leaves it
    # out of "undefined"). No recovery: undefined behaviour fails the test that reached it.
    set(_dlbench_sanitize_flags -fsanitize=address,undefined,float-cast-overflow -fno-sanitize-recover=all)
  elseif(DLBENCH_SANITIZE STREQUAL "thread")
    set(_dlbench_sanitize_flags -fsanitize=thread)
  else()
    message(FATAL_ERROR "DLBENCH_SANITIZE: expected address,undefined or thread (got '${DLBENCH_SANITIZE}')")
  endif()
  add_compile_options(${_dlbench_sanitize_flags} -fno-omit-frame-pointer)
  add_link_options(${_dlbench_sanitize_flags})
  message(STATUS "dlbench: sanitizer build (${DLBENCH_SANITIZE})")
endif()
