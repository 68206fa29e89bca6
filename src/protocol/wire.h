// The runner protocol's wire format (docs/protocol.md is the normative description).
//
// A stream of frames in each direction over a dedicated pipe pair. A frame is
//   u32 payload_length | u16 type | u16 reserved (0) | payload
// all little-endian. Payloads are UTF-8 JSON objects except STEPS, which is binary so that a
// runner can record a step in tens of nanoseconds: u32 rank | u32 count | count x StepRecord.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "common/error.h"

#if !defined(__BYTE_ORDER__) || __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "the dlbench protocol encoder assumes a little-endian host"
#endif

namespace dlbench::protocol {

inline constexpr int kProtocolVersion = 1;
inline constexpr std::uint32_t kMaxPayloadBytes = 64u << 20;  // a longer frame is a protocol violation
inline constexpr std::size_t kFrameHeaderBytes = 8;

enum class MessageType : std::uint16_t {
  kHello = 1,      // runner -> orchestrator, JSON: who the runner is, versions, devices
  kConfigure = 2,  // orchestrator -> runner, JSON: the cell's parameters, seed, limits
  kReady = 3,      // runner -> orchestrator, JSON: setup done, the effective parameters
  kSteps = 4,      // runner -> orchestrator, binary: a batch of step records
  kMemory = 5,     // runner -> orchestrator, JSON: an allocator/RSS snapshot with a label
  kExtras = 6,     // runner -> orchestrator, JSON: extra metrics and facts about the cell
  kError = 7,      // runner -> orchestrator, JSON: {kind: oom|invalid|unsupported|internal, message}
  kDone = 8,       // runner -> orchestrator, JSON: the runner ends normally; nothing follows
  kStop = 9,       // orchestrator -> runner, JSON: stop stepping, flush, report, send DONE
};

const char* MessageTypeName(MessageType type);

// Which optional phase fields of a StepRecord carry a value.
enum StepFieldBits : std::uint32_t {
  kHasDataWait = 1u << 0,
  kHasCompute = 1u << 1,
  kHasComm = 1u << 2,
};

// One step as the runner saw it. Times are CLOCK_MONOTONIC nanoseconds. The phase durations are
// meaningful only when their bit is set in `present` (absent is not zero).
struct StepRecord {
  std::int64_t start_ns = 0;
  std::int64_t end_ns = 0;
  std::int64_t data_wait_ns = 0;  // time the step waited for its input
  std::int64_t compute_ns = 0;    // time in forward/backward/optimizer
  std::int64_t comm_ns = 0;       // exposed communication (e.g. gradient all-reduce)
  std::uint32_t samples = 0;      // samples processed by this step (the batch size, usually)
  std::uint32_t present = 0;      // StepFieldBits
};
static_assert(sizeof(StepRecord) == 48, "StepRecord is part of the wire format");

struct Frame {
  MessageType type = MessageType::kHello;
  std::string payload;
};

// Appends one frame to `out`.
void AppendJsonFrame(std::string& out, MessageType type, const nlohmann::json& body);
void AppendStepsFrame(std::string& out, std::uint32_t rank, const StepRecord* records, std::size_t count);

struct StepBatch {
  std::uint32_t rank = 0;
  std::vector<StepRecord> records;
};

Result<StepBatch> DecodeSteps(const Frame& frame);
Result<nlohmann::json> DecodeJson(const Frame& frame);

// Reassembles frames from a byte stream that arrives in arbitrary pieces.
class FrameReader {
 public:
  void Feed(const char* data, std::size_t size);
  // The next complete frame, nullopt when more bytes are needed, or a protocol error (unknown
  // type, oversized frame) after which the stream cannot be trusted.
  Result<std::optional<Frame>> Next();
  std::size_t buffered_bytes() const { return buffer_.size() - offset_; }

 private:
  std::string buffer_;
  std::size_t offset_ = 0;
};

// Writes all of `data` to fd, retrying on EINTR and short writes. kIo on failure (EPIPE when the
// peer has gone).
Status WriteAll(int fd, const char* data, std::size_t size);
inline Status WriteAll(int fd, const std::string& data) { return WriteAll(fd, data.data(), data.size()); }

// Reads what is available (blocking until at least one byte or EOF unless fd is non-blocking)
// and feeds it to reader. Returns bytes read; 0 means end of stream.
Result<std::size_t> ReadInto(int fd, FrameReader& reader);

}  // namespace dlbench::protocol
