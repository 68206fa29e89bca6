// The fuzz targets as plain functions, so that one body serves both the libFuzzer binaries
// (fuzz_<name>.cc, built with -DDLBENCH_FUZZ=ON) and the regression test that replays every seed
// and every input a fuzzer ever crashed on (fuzz_regression_test, built by the default build).
//
// Each takes arbitrary bytes, drives the real code with them and returns 0. A property that must
// hold for every input (a decoded frame re-encodes to the same bytes, ...) is checked with
// DLBENCH_CHECK, which aborts: to a fuzzer that is a crash to report.
#pragma once

#include <cstddef>
#include <cstdint>

namespace dlbench::fuzz {

// config::ParseMatrix over the bytes as a matrix file; a valid matrix small enough is expanded
// (plan::Expand) and its cells estimated and labelled.
int FuzzMatrix(const std::uint8_t* data, std::size_t size);
// protocol::FrameReader fed the bytes in pieces (sizes drawn from the first byte), every frame
// decoded with DecodeSteps, DecodeQueries or DecodeJson and re-encoded.
int FuzzFrames(const std::uint8_t* data, std::size_t size);
// report::ParseProgress over the bytes as a progress file.
int FuzzProgress(const std::uint8_t* data, std::size_t size);
// The bytes as what a client sends to `dlbench serve`: written into one end of a socketpair whose
// other end the real report::MetricsServer serves (with a store holding one run); the answer is
// read to the end. A connection the server never closes is a hang (aborts after 20 s); the
// server's inactivity timeout is 1 s here, so an input that only waits for it costs about 1 s.
int FuzzHttp(const std::uint8_t* data, std::size_t size);

// The bytes as a TFRecord file (tfrecord::ScanRecords, both CRCs checked), each record's data
// parsed as a tf.train.Example (ParseImageExample), and the same bytes as an IDX file
// (idx::ParseIdx, the Fashion-MNIST reader). A record found re-frames to the bytes at its span; an
// Example parsed re-encodes and parses to the same image and label; an IDX array holds exactly
// its dimensions' product of elements.
int FuzzTfRecord(const std::uint8_t* data, std::size_t size);

// The bytes as each procfs text the monitor parses (monitor/procfs_sampler.h): a /proc/<pid>/stat
// line (any process names itself, so its comm may hold spaces and parentheses), /proc/stat,
// /proc/meminfo and a thread's schedstat. A stat line parsed has the pid its text starts with;
// a meminfo parsed has whole KiB.
int FuzzProcfs(const std::uint8_t* data, std::size_t size);

}  // namespace dlbench::fuzz
