#!/usr/bin/env bash
# Prints a short digest of a failed stage's log: what scripts/test.sh shows at the very end of a
# run, since a CI service may keep only the last part of a long log (session 21's landing failed in
# its asan stage and the part kept began in the tsan stage, so the failing test was not named).
#
#   scripts/failure-digest.sh LOG [MAX_LINES]
#
# From ctest's output (with --output-on-failure): the "tests FAILED" list and, for each failed test
# (at most 4), the head and tail of its output. Otherwise (a build, a fuzzer or a test binary run
# alone): the lines that name an error, then the log's last lines. Lines are cut at 240 characters;
# MAX_LINES (default 150) bounds the whole digest.
set -euo pipefail
log="${1:-}"
max="${2:-150}"
if [ -z "$log" ] || [ ! -f "$log" ]; then
  echo "usage: scripts/failure-digest.sh LOG [MAX_LINES] ('$log' is not a file)" >&2
  exit 2
fi
case "$max" in
  '' | *[!0-9]*) echo "failure-digest.sh: MAX_LINES must be a whole number, not '$max'" >&2; exit 2 ;;
esac
LC_ALL=C awk -v max="$max" '
  function cut(s) {
    gsub(/\.\.\.\.+/, " ... ", s)  # ctest pads a test name with dots to a wide column
    return length(s) > 240 ? substr(s, 1, 240) " [...]" : s
  }
  # A ctest result line: "  12/345 Test  #67: Name ....***Failed    1.23 sec" (also ***Timeout,
  # ***Exception, Exit code, Subprocess aborted/killed, SEGFAULT); "Start" lines end a test output.
  function is_result(s) { return s ~ /^ *([0-9]+\/[0-9]+ )?Test +#[0-9]+: / }
  function is_start(s) { return s ~ /^ *Start +[0-9]+: / }
  function end_test() {
    if (cur == "") return
    n_out[cur_i] = n
    cur = ""
  }
  {
    line = $0
    sub(/\r$/, "", line)
    if (is_result(line) || is_start(line) || line ~ /^[0-9]+% tests passed/) {
      end_test()
      if (is_result(line) && line !~ / Passed +[0-9.]+ sec$/ && line !~ /\*\*\*Not Run/ && line !~ /Skipped +[0-9.]+ sec$/ && n_tests < 4) {
        cur = line
        cur_i = ++n_tests
        head[cur_i] = line
        n = 0
      } else if (is_result(line) && line !~ / Passed +[0-9.]+ sec$/ && line !~ /Skipped +[0-9.]+ sec$/) {
        ++more_tests
      }
    } else if (cur != "") {
      ++n
      out[cur_i, n] = line
    }
    if (line ~ /^The following tests FAILED:/) { in_list = 1; n_list = 0 }
    else if (in_list && line ~ /^[ \t]+[0-9]+ - /) { list[++n_list] = line }
    else if (in_list) { in_list = 0 }
    if (line ~ /(error:|FAILED:|\*\*\*Failed|No space left|ERROR: AddressSanitizer|ERROR: LeakSanitizer|runtime error:|WARNING: ThreadSanitizer|SUMMARY: |Segmentation fault|Killed|[Ee]rror [0-9]+$|CMake Error|ninja: build stopped)/ && n_err < 30) {
      err[++n_err] = NR ": " line
    }
    tail_buf[NR % 25] = line
  }
  END {
    end_test()
    printed = 0
    if (n_list > 0) {
      print "ctest: the following tests FAILED:"
      for (i = 1; i <= n_list && printed < max; i++) { print cut(list[i]); printed++ }
    }
    if (n_tests > 0) {
      for (t = 1; t <= n_tests && printed < max; t++) {
        k = n_out[t]
        print "--- " cut(head[t]) " (" k " line(s) of output)"
        printed++
        for (i = 1; i <= k && printed < max; i++) {
          if (k > 45 && i == 31) {
            print "    [... " (k - 45) " line(s) ...]"
            i = k - 14
            printed++
          }
          print "    " cut(out[t, i])
          printed++
        }
      }
      if (more_tests > 0) print "(" more_tests " more failed test(s): the list above, or the stage log)"
      exit 0
    }
    if (n_err > 0) {
      print "lines that name an error (line number: text):"
      for (i = 1; i <= n_err && printed < max; i++) { print "    " cut(err[i]); printed++ }
    }
    print "the log'"'"'s last lines:"
    first = NR > 25 ? NR - 24 : 1
    for (i = first; i <= NR && printed < max; i++) { print "    " cut(tail_buf[i % 25]); printed++ }
  }
' "$log"
