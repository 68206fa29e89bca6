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
#include "record/step.h"

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

// Step records travel byte for byte as record::StepRecord (docs/protocol.md "Step record").
using record::kHasComm;
using record::kHasCompute;
using record::kHasDataWait;
using record::StepFieldBits;
using record::StepRecord;

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
