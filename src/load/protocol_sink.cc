#include "load/protocol_sink.h"

#include <utility>

#include "protocol/wire.h"

namespace dlbench::load {

ProtocolQuerySink::ProtocolQuerySink(int out_fd, std::uint32_t rank, std::function<bool()> poll_stop)
    : out_fd_(out_fd), rank_(rank), poll_stop_(std::move(poll_stop)) {}

void ProtocolQuerySink::Write(const record::QueryRecord* records, std::size_t count) {
  if (write_failed_ || count == 0) return;
  scratch_.clear();
  protocol::AppendQueriesFrame(scratch_, rank_, records, count);
  if (!protocol::WriteAll(out_fd_, scratch_).ok()) {
    write_failed_ = true;
    return;
  }
  records_written_ += count;
}

bool ProtocolQuerySink::StopRequested() { return write_failed_ || (poll_stop_ && poll_stop_()); }

}  // namespace dlbench::load
