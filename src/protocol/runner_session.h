// The runner's side of the protocol, for runners written in C++ (dlbench-null, dlbench-torch).
// clients/python mirrors it for Python programs.
//
// Calling sequence (docs/protocol.md):
//   auto session = RunnerSession::Connect();          // fds from DLBENCH_PROTOCOL_FD_IN/_OUT
//   session->SendHello({...});
//   auto cell = session->ReceiveConfigure();
//   ...build the model; on failure SendError(...) and return...
//   session->SendReady(effective_params);
//   RunStepLoop(*session, cell.limits, step_fn);      // streams STEPS until STOP or a ceiling
//   session->SendMemory(...); session->SendExtras(...);
//   session->SendDone(reason, steps);
// A runner whose HELLO says "multi_cell": true and whose CONFIGURE said serve_more then calls
// BeginNextCell() and ReceiveConfigure() again; the end of the command pipe there ends it (kIo).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "common/clock.h"
#include "common/error.h"
#include "protocol/wire.h"
#include "record/outcome.h"

namespace dlbench::protocol {

inline constexpr char kFdInEnv[] = "DLBENCH_PROTOCOL_FD_IN";    // the runner reads commands here
inline constexpr char kFdOutEnv[] = "DLBENCH_PROTOCOL_FD_OUT";  // the runner writes messages here

// Ceilings a runner enforces by itself, so that a lost orchestrator never leaves it running.
struct RunnerLimits {
  std::int64_t max_steps = 1'000'000;
  double max_time_s = 600.0;
};

// Where the ranks of a ddp cell meet (docs/distributed.md): a c10d FileStore at `file` (an
// absolute path; what `dlbench run` gives the ranks it starts on one host, so nothing listens on
// the network), or else a c10d TCPStore that rank 0 serves on `addr:port` (a launcher whose ranks
// span hosts). `local_rank` picks the rank's device on its host, `local_world_size` ranks share
// the host. Sent only for a cell of world_size > 1 launched as ranks.
struct Rendezvous {
  std::string file;
  std::string addr;
  int port = 0;
  int local_rank = 0;
  int local_world_size = 1;
};

// What CONFIGURE carries.
struct CellConfig {
  nlohmann::json params = nlohmann::json::object();  // every cell parameter, by registry name
  std::uint64_t seed = 0;
  int rank = 0;
  int world_size = 1;
  RunnerLimits limits;
  std::string cell_key;
  std::optional<Rendezvous> rendezvous;  // CONFIGURE's "rendezvous" object, when present
  // CONFIGURE's "serve_more" (docs/adr/0011-runner-reuse.md): after this cell's DONE the runner
  // waits for another CONFIGURE (or the end of its command pipe) instead of exiting. Sent only to
  // a runner whose HELLO said "multi_cell": true.
  bool serve_more = false;
  // CONFIGURE's "attempt": which measurement of this cell this is, from 1 (measure.retry_disturbed
  // runs a disturbed cell again, docs/measurement.md "Measuring again"). Sent only when above 1.
  int attempt = 1;
};

Result<CellConfig> ParseConfigure(const nlohmann::json& body);
nlohmann::json ConfigureToJson(const CellConfig& config);

using record::RunnerErrorKind;  // ERROR's "kind"; record::Name gives the wire text

class RunnerSession {
 public:
  // Records kept before a STEPS frame is sent, and the longest a record waits before it is sent.
  static constexpr std::size_t kBatchRecords = 1024;
  static constexpr std::int64_t kFlushIntervalNs = 50'000'000;

  // Uses the fds named by DLBENCH_PROTOCOL_FD_IN/_OUT; kInvalidInput when they are not set
  // (the runner was started by hand, not by dlbench).
  static Result<std::unique_ptr<RunnerSession>> Connect();
  static std::unique_ptr<RunnerSession> FromFds(int in_fd, int out_fd);

  Status SendHello(nlohmann::json hello);  // fills "protocol" and "pid"
  // Blocks until CONFIGURE arrives; kProtocol on anything else, kIo on EOF. A STOP before it is
  // skipped: the previous cell's, sent as that cell ended by itself (a runner serving several cells).
  Result<CellConfig> ReceiveConfigure();
  // Between two cells of one process (CONFIGURE's serve_more): forgets the previous cell's STOP and
  // steps, so the next cell starts as the first did. An orchestrator that went away stays gone.
  void BeginNextCell();
  Status SendReady(const nlohmann::json& effective);
  Status SendMemory(const nlohmann::json& snapshot);
  Status SendExtras(const nlohmann::json& extras);
  Status SendError(RunnerErrorKind kind, const std::string& message,
                   const nlohmann::json& details = nlohmann::json::object());
  Status SendDone(const std::string& reason, std::int64_t steps);

  // Hot path: copies the record into the STEPS frame being filled; sends the frame when it holds
  // kBatchRecords records or kFlushIntervalNs has passed since the last one (checked against the
  // record's end). No allocation. Call it outside the timed region, after the end timestamp.
  // Where the output is a pipe, a full frame is handed to it by reference (vmsplice) rather than
  // copied into it; see the ring's comment below.
  void Record(const StepRecord& record) noexcept {
    frame_->records[count_] = record;
    Commit(record.end_ns);
  }
  // The same without the copy, for a loop that fills the record in place: NextRecord() is the
  // slot the next Record would fill, zeroed; CommitRecord() takes it once it holds the step.
  StepRecord& NextRecord() noexcept { return frame_->records[count_] = StepRecord{}; }
  // NOLINTNEXTLINE(bugprone-exception-escape): as Record, a flush that cannot allocate ends the runner
  void CommitRecord() noexcept { Commit(frame_->records[count_].end_ns); }
  // Sends what is buffered, then looks (without blocking) for STOP or a closed command pipe.
  void FlushSteps(std::int64_t now_ns);
  // True once STOP arrived, the orchestrator went away, or a write failed.
  bool stop_requested() const { return stop_requested_; }
  void set_rank(std::uint32_t rank) { rank_ = rank; }
  // Whether STEPS frames go to the pipe by reference (false where the output is no pipe, where
  // vmsplice failed once, or with DLBENCH_NO_VMSPLICE=1 in the environment); for tests.
  bool splicing() const { return splice_; }
  // STEPS frames sent so far, by reference and by copy; for tests and benchmarks.
  struct FrameCounts {
    std::uint64_t spliced = 0;
    std::uint64_t copied = 0;
  };
  FrameCounts frame_counts() const { return frame_counts_; }
  ~RunnerSession();
  RunnerSession(const RunnerSession&) = delete;
  RunnerSession& operator=(const RunnerSession&) = delete;

 private:
  // The STEPS frame being filled, laid out as it goes on the wire (frame header, rank, count, then
  // the records), so that a flush writes it as it is, without copying the records again.
  struct StepsFrame {
    char head[kStepsHeadBytes];
    StepRecord records[kBatchRecords];
  };
  static_assert(offsetof(StepsFrame, records) == kStepsHeadBytes, "the records follow the head, no padding");

  RunnerSession(int in_fd, int out_fd);
  Status SendJson(MessageType type, const nlohmann::json& body);
  void PollCommands();
  // Sends frame_'s `bytes` (vmsplice where it can, else write) and picks the next frame to fill.
  Status SendFrame(std::size_t bytes);
  // Whether the pipe has handed on every byte up to `end` (a count of bytes written to out_fd_).
  bool Consumed(std::uint64_t end) const;
  StepsFrame* RingFrame(std::size_t i) const;
  // NOLINTNEXTLINE(bugprone-exception-escape): as Record, a flush that cannot allocate ends the runner
  void Commit(std::int64_t end_ns) noexcept {
    if (++count_ == kBatchRecords || end_ns - last_flush_ns_ >= kFlushIntervalNs) FlushSteps(end_ns);
  }

  int in_fd_;
  int out_fd_;
  std::uint32_t rank_ = 0;
  // The frame being filled: one of the ring's buffers (ring_memory_), or spare_.
  //
  // A write() into a pipe copies the frame into pages the kernel allocates (and charges to the
  // memory cgroup) for it: on the development VMs about 3-20 us per 48 KiB frame, the largest
  // part of the harness's cost per step after the two clock reads (docs/benchmarks.md). vmsplice
  // hands the pipe the frame's own pages instead, so a frame must not be written again until the
  // reader has taken it. The frames therefore rotate through a ring of kRingFrames page-aligned
  // buffers, and before a buffer is filled again FIONREAD on the pipe says whether its bytes have
  // been read: bytes written minus bytes unread must reach the buffer's end. Where they have not,
  // the frame is filled in spare_ and written by copy, as before. A full frame takes 13 of a
  // default pipe's 16 page slots, and vmsplice, like write, returns only once the whole frame is
  // in the pipe, so by then at most 3 pages of the frame before are unread and the buffer filled
  // next (the frame three back) is free; smaller frames come kFlushIntervalNs apart, long after
  // the reader took the ones before.
  // The ring is mmap'd and munmap'd, never handed back to malloc: pages still in the pipe at the
  // end stay the pipe's, and no later allocation of this process can write into them.
  static constexpr std::size_t kRingFrames = 4;
  StepsFrame* frame_ = nullptr;
  std::unique_ptr<StepsFrame> spare_;
  void* ring_memory_ = nullptr;
  std::size_t ring_bytes_ = 0;
  std::size_t ring_stride_ = 0;  // a frame's size rounded up to whole pages
  std::size_t ring_at_ = 0;      // the ring's buffer being filled, or to be filled once it is free
  std::uint64_t ring_end_[kRingFrames] = {};  // for each buffer, the byte count its frame ended at
  std::uint64_t bytes_out_ = 0;               // bytes written to out_fd_ by this session
  bool splice_ = false;
  FrameCounts frame_counts_;
  std::size_t count_ = 0;
  std::int64_t last_flush_ns_ = 0;
  bool stop_requested_ = false;
  bool orchestrator_gone_ = false;  // a failed write or the end of the command pipe
  FrameReader reader_;
};

enum class LoopEnd { kStopped, kMaxSteps, kMaxTime, kStepFailed };
const char* LoopEndName(LoopEnd end);

struct LoopResult {
  LoopEnd end = LoopEnd::kStopped;
  std::int64_t steps = 0;
};

// The measured loop shared by every C++ runner. `step(StepRecord&)` does one step, sets
// `samples` (and phase fields it knows), and must leave the device synchronised before it
// returns; it returns false on failure (after reporting it). The loop takes the start and end
// timestamps around the call and nothing else runs between them. The record `step` fills is the
// session's next slot (NextRecord), so `step` must not record or flush through the session itself.
template <class StepFn>
LoopResult RunStepLoop(RunnerSession& session, const RunnerLimits& limits, StepFn&& step) {
  const std::int64_t begin_ns = MonotonicNowNs();
  const std::int64_t max_time_ns = static_cast<std::int64_t>(limits.max_time_s * 1e9);
  LoopResult result;
  for (;;) {
    StepRecord& record = session.NextRecord();
    const std::int64_t t0 = MonotonicNowNs();
    const bool ok = step(record);
    const std::int64_t t1 = MonotonicNowNs();
    record.start_ns = t0;
    record.end_ns = t1;
    session.CommitRecord();
    ++result.steps;
    if (!ok) {
      result.end = LoopEnd::kStepFailed;
      break;
    }
    if (session.stop_requested()) {
      result.end = LoopEnd::kStopped;
      break;
    }
    if (result.steps >= limits.max_steps) {
      result.end = LoopEnd::kMaxSteps;
      break;
    }
    if (t1 - begin_ns >= max_time_ns) {
      result.end = LoopEnd::kMaxTime;
      break;
    }
  }
  session.FlushSteps(MonotonicNowNs());
  return result;
}

}  // namespace dlbench::protocol
