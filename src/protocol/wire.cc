#include "protocol/wire.h"

#include <string.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <utility>

namespace dlbench::protocol {

const char* MessageTypeName(MessageType type) {
  switch (type) {
    case MessageType::kHello:
      return "HELLO";
    case MessageType::kConfigure:
      return "CONFIGURE";
    case MessageType::kReady:
      return "READY";
    case MessageType::kSteps:
      return "STEPS";
    case MessageType::kMemory:
      return "MEMORY";
    case MessageType::kExtras:
      return "EXTRAS";
    case MessageType::kError:
      return "ERROR";
    case MessageType::kDone:
      return "DONE";
    case MessageType::kStop:
      return "STOP";
    case MessageType::kQueries:
      return "QUERIES";
  }
  return "UNKNOWN";
}

namespace {

void EncodeHeader(char* header, MessageType type, std::uint32_t length) {
  std::uint16_t t = static_cast<std::uint16_t>(type);
  std::uint16_t reserved = 0;
  std::memcpy(header, &length, 4);
  std::memcpy(header + 4, &t, 2);
  std::memcpy(header + 6, &reserved, 2);
}

void AppendHeader(std::string& out, MessageType type, std::uint32_t length) {
  char header[kFrameHeaderBytes];
  EncodeHeader(header, type, length);
  out.append(header, sizeof header);
}

bool KnownType(std::uint16_t t) { return t >= 1 && t <= 10; }

}  // namespace

void AppendJsonFrame(std::string& out, MessageType type, const nlohmann::json& body) {
  // Invalid UTF-8 from a runner's message is replaced, not fatal.
  std::string text = body.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  AppendHeader(out, type, static_cast<std::uint32_t>(text.size()));
  out += text;
}

std::size_t EncodeStepsHead(char* head, std::uint32_t rank, std::size_t count) {
  const std::uint32_t n = static_cast<std::uint32_t>(count);
  const std::size_t payload = 8 + count * sizeof(StepRecord);
  EncodeHeader(head, MessageType::kSteps, static_cast<std::uint32_t>(payload));
  std::memcpy(head + kFrameHeaderBytes, &rank, 4);
  std::memcpy(head + kFrameHeaderBytes + 4, &n, 4);
  return kFrameHeaderBytes + payload;
}

void AppendStepsFrame(std::string& out, std::uint32_t rank, const StepRecord* records, std::size_t count) {
  char head[kStepsHeadBytes];
  EncodeStepsHead(head, rank, count);
  out.append(head, sizeof head);
  out.append(reinterpret_cast<const char*>(records), count * sizeof(StepRecord));
}

Result<StepBatch> DecodeSteps(const Frame& frame) {
  if (frame.type != MessageType::kSteps) return MakeError(ErrorKind::kProtocol, "not a STEPS frame");
  if (frame.payload.size() < 8) return MakeError(ErrorKind::kProtocol, "STEPS frame shorter than its header");
  StepBatch batch;
  std::uint32_t count = 0;
  std::memcpy(&batch.rank, frame.payload.data(), 4);
  std::memcpy(&count, frame.payload.data() + 4, 4);
  if (frame.payload.size() != 8 + static_cast<std::size_t>(count) * sizeof(StepRecord)) {
    return MakeError(ErrorKind::kProtocol,
                     "STEPS frame length does not match its record count " + std::to_string(count));
  }
  batch.records.resize(count);
  if (count > 0) std::memcpy(batch.records.data(), frame.payload.data() + 8, count * sizeof(StepRecord));
  for (const auto& r : batch.records) {
    if (r.end_ns < r.start_ns) {
      return MakeError(ErrorKind::kProtocol, "a step record ends before it starts");
    }
  }
  return batch;
}

void AppendQueriesFrame(std::string& out, std::uint32_t rank, const QueryRecord* records, std::size_t count) {
  const std::uint32_t header[4] = {rank, static_cast<std::uint32_t>(count), kQueriesVersion,
                                   static_cast<std::uint32_t>(sizeof(QueryRecord))};
  AppendHeader(out, MessageType::kQueries,
               static_cast<std::uint32_t>(kQueriesHeaderBytes + count * sizeof(QueryRecord)));
  out.append(reinterpret_cast<const char*>(header), sizeof header);
  out.append(reinterpret_cast<const char*>(records), count * sizeof(QueryRecord));
}

namespace {

// Why a decoded query record cannot be true, or empty when it can.
std::string QueryRecordProblem(const QueryRecord& r) {
  if (r.issued_ns < r.scheduled_ns) return "is issued before it is scheduled";
  if (r.completed_ns < r.issued_ns) return "completes before it is issued";
  if (r.samples == 0) return "has no samples";
  if ((r.present & ~record::kQueryFieldMask) != 0) {
    return "sets decomposition bits " + std::to_string(r.present & ~record::kQueryFieldMask) +
           " that version 1 does not define";
  }
  const std::pair<std::uint32_t, std::int64_t> durations[] = {{record::kQueryHasHostPre, r.host_pre_ns},
                                                              {record::kQueryHasH2d, r.h2d_ns},
                                                              {record::kQueryHasCompute, r.compute_ns},
                                                              {record::kQueryHasD2h, r.d2h_ns},
                                                              {record::kQueryHasHostPost, r.host_post_ns}};
  for (const auto& [bit, ns] : durations) {
    if ((r.present & bit) != 0 && ns < 0) return "has a negative decomposition duration";
  }
  return {};
}

}  // namespace

Result<QueryBatch> DecodeQueries(const Frame& frame) {
  if (frame.type != MessageType::kQueries) return MakeError(ErrorKind::kProtocol, "not a QUERIES frame");
  if (frame.payload.size() < kQueriesHeaderBytes) {
    return MakeError(ErrorKind::kProtocol, "QUERIES frame shorter than its header");
  }
  std::uint32_t header[4];
  std::memcpy(header, frame.payload.data(), sizeof header);
  QueryBatch batch;
  batch.rank = header[0];
  const std::uint32_t count = header[1];
  const std::uint32_t version = header[2];
  const std::uint32_t record_bytes = header[3];
  if (version != kQueriesVersion) {
    return MakeError(ErrorKind::kProtocol, "QUERIES layout version " + std::to_string(version) +
                                               " (this dlbench reads version " +
                                               std::to_string(kQueriesVersion) + ")");
  }
  if (record_bytes < sizeof(QueryRecord) || record_bytes > kMaxQueryRecordBytes) {
    return MakeError(ErrorKind::kProtocol, "QUERIES record size " + std::to_string(record_bytes) +
                                               " bytes (expected " + std::to_string(sizeof(QueryRecord)) +
                                               " to " + std::to_string(kMaxQueryRecordBytes) + ")");
  }
  // 64-bit arithmetic: count x record_bytes cannot overflow (both below 2^32).
  const std::uint64_t expected = kQueriesHeaderBytes + static_cast<std::uint64_t>(count) * record_bytes;
  if (frame.payload.size() != expected) {
    return MakeError(ErrorKind::kProtocol,
                     "QUERIES frame length does not match its record count " + std::to_string(count));
  }
  batch.records.resize(count);
  for (std::uint32_t i = 0; i < count; ++i) {
    QueryRecord& r = batch.records[i];
    std::memcpy(&r, frame.payload.data() + kQueriesHeaderBytes + static_cast<std::size_t>(i) * record_bytes,
                sizeof(QueryRecord));
    const std::string problem = QueryRecordProblem(r);
    if (!problem.empty()) {
      return MakeError(ErrorKind::kProtocol, "query " + std::to_string(r.query_id) + " " + problem);
    }
  }
  return batch;
}

Result<nlohmann::json> DecodeJson(const Frame& frame) {
  try {
    auto j = nlohmann::json::parse(frame.payload);
    if (!j.is_object()) {
      return MakeError(ErrorKind::kProtocol,
                       std::string(MessageTypeName(frame.type)) + " payload is not a JSON object");
    }
    return j;
  } catch (const nlohmann::json::exception& e) {
    return MakeError(ErrorKind::kProtocol,
                     std::string(MessageTypeName(frame.type)) + " payload is not valid JSON: " + e.what());
  }
}

void FrameReader::Feed(const char* data, std::size_t size) {
  if (offset_ > 0 && offset_ == buffer_.size()) {
    buffer_.clear();
    offset_ = 0;
  } else if (offset_ > (1u << 20)) {
    buffer_.erase(0, offset_);
    offset_ = 0;
  }
  buffer_.append(data, size);
}

Result<std::optional<Frame>> FrameReader::Next() {
  if (buffer_.size() - offset_ < kFrameHeaderBytes) return std::optional<Frame>();
  std::uint32_t length = 0;
  std::uint16_t type = 0;
  std::memcpy(&length, buffer_.data() + offset_, 4);
  std::memcpy(&type, buffer_.data() + offset_ + 4, 2);
  if (!KnownType(type)) {
    return MakeError(ErrorKind::kProtocol, "unknown frame type " + std::to_string(type));
  }
  if (length > kMaxPayloadBytes) {
    return MakeError(ErrorKind::kProtocol, "frame of " + std::to_string(length) + " bytes exceeds the limit");
  }
  if (buffer_.size() - offset_ < kFrameHeaderBytes + length) return std::optional<Frame>();
  Frame frame;
  frame.type = static_cast<MessageType>(type);
  frame.payload.assign(buffer_, offset_ + kFrameHeaderBytes, length);
  offset_ += kFrameHeaderBytes + length;
  return std::optional<Frame>(std::move(frame));
}

Status WriteAll(int fd, const char* data, std::size_t size) {
  while (size > 0) {
    ssize_t n = ::write(fd, data, size);
    if (n < 0) {
      if (errno == EINTR) continue;
      return MakeError(ErrorKind::kIo, std::string("protocol write failed: ") + strerror(errno));
    }
    data += n;
    size -= static_cast<std::size_t>(n);
  }
  return Status::Ok();
}

Result<std::size_t> ReadInto(int fd, FrameReader& reader) {
  char buf[1 << 16];
  for (;;) {
    ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0) {
      if (errno == EINTR) continue;
      return MakeError(ErrorKind::kIo, std::string("protocol read failed: ") + strerror(errno));
    }
    if (n > 0) reader.Feed(buf, static_cast<std::size_t>(n));
    return static_cast<std::size_t>(n);
  }
}

}  // namespace dlbench::protocol
