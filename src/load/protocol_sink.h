// The runner's QueryRecordSink: QUERIES frames on the protocol's output fd (docs/protocol.md).
#pragma once

#include <cstdint>
#include <functional>
#include <string>

#include "load/system_under_test.h"

namespace dlbench::load {

class ProtocolQuerySink final : public QueryRecordSink {
 public:
  // Writes each batch as one QUERIES frame of `rank` to `out_fd` (which the caller keeps open).
  // `poll_stop` is asked after every write whether the orchestrator sent STOP or went away; it is
  // called on the same thread as Write, never concurrently with it. A failed write stops the run.
  ProtocolQuerySink(int out_fd, std::uint32_t rank, std::function<bool()> poll_stop);

  void Write(const record::QueryRecord* records, std::size_t count) override;
  bool StopRequested() override;

  std::uint64_t records_written() const { return records_written_; }
  bool write_failed() const { return write_failed_; }

 private:
  int out_fd_;
  std::uint32_t rank_;
  std::function<bool()> poll_stop_;
  std::string scratch_;
  std::uint64_t records_written_ = 0;
  bool write_failed_ = false;
};

}  // namespace dlbench::load
