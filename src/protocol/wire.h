// The runner protocol's wire format (docs/protocol.md is the normative description).
//
// A stream of frames in each direction over a dedicated pipe pair. A frame is
//   u32 payload_length | u16 type | u16 reserved (0) | payload
// all little-endian. Payloads are UTF-8 JSON objects except STEPS and QUERIES, which are binary so
// that a runner can record a step or a query in tens of nanoseconds:
//   STEPS:   u32 rank | u32 count | count x StepRecord
//   QUERIES: u32 rank | u32 count | u32 version | u32 record_bytes | count x QueryRecord
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "common/error.h"
#include "record/query.h"
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
  kQueries = 10,   // runner -> orchestrator, binary: a batch of query records (inference under load)
};

const char* MessageTypeName(MessageType type);

// Step records travel byte for byte as record::StepRecord (docs/protocol.md "Step record").
using record::kHasComm;
using record::kHasCompute;
using record::kHasDataWait;
using record::StepFieldBits;
using record::StepRecord;

// Query records travel byte for byte as record::QueryRecord (docs/protocol.md "Query record").
// The QUERIES payload names its layout version and record size: a version-1 reader accepts
// records longer than its own (fields appended later, read as the prefix it knows); a different
// version is a layout it cannot read.
inline constexpr std::uint32_t kQueriesVersion = 1;
inline constexpr std::size_t kQueriesHeaderBytes = 16;
inline constexpr std::uint32_t kMaxQueryRecordBytes = 4096;
using record::QueryRecord;

struct Frame {
  MessageType type = MessageType::kHello;
  std::string payload;
};

// Appends one frame to `out`.
void AppendJsonFrame(std::string& out, MessageType type, const nlohmann::json& body);
void AppendStepsFrame(std::string& out, std::uint32_t rank, const StepRecord* records, std::size_t count);
// A STEPS frame's bytes before its records: the frame header, rank and count.
inline constexpr std::size_t kStepsHeadBytes = kFrameHeaderBytes + 8;
// Writes those kStepsHeadBytes into `head` and returns the whole frame's length, for a frame whose
// `count` records follow `head` in memory (RunnerSession fills its frame in place).
std::size_t EncodeStepsHead(char* head, std::uint32_t rank, std::size_t count);

// Appends one QUERIES frame (version kQueriesVersion, records of sizeof(QueryRecord) bytes).
void AppendQueriesFrame(std::string& out, std::uint32_t rank, const QueryRecord* records, std::size_t count);

struct StepBatch {
  std::uint32_t rank = 0;
  std::vector<StepRecord> records;
};

Result<StepBatch> DecodeSteps(const Frame& frame);

struct QueryBatch {
  std::uint32_t rank = 0;
  std::vector<QueryRecord> records;
};

// Decodes a QUERIES frame. kProtocol for a short or inconsistent payload (length not matching
// count x record_bytes), another layout version, a record size below sizeof(QueryRecord) or above
// kMaxQueryRecordBytes, and for a record that cannot be true: issued before scheduled, completed
// before issued, no samples, a decomposition bit this version does not define, or a negative
// duration whose bit is set. The message names the query id.
Result<QueryBatch> DecodeQueries(const Frame& frame);
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
