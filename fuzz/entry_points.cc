#include "entry_points.h"

#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstring>
#include <memory>
#include <string>
#include <thread>

#include "common/error.h"
#include "common/text.h"
#include "config/matrix.h"
#include "idx/idx.h"
#include "monitor/procfs_sampler.h"
#include "plan/estimate.h"
#include "plan/plan.h"
#include "protocol/wire.h"
#include "record/metrics.h"
#include "record/outcome.h"
#include "report/metrics_server.h"
#include "report/prometheus.h"
#include "store/sqlite_store.h"
#include "tfrecord/example.h"
#include "tfrecord/record.h"

namespace dlbench::fuzz {
namespace {

std::string Text(const std::uint8_t* data, std::size_t size) {
  return std::string(reinterpret_cast<const char*>(data), size);
}

// Plans with more cells than this are only checked to be refused or counted: expanding tens of
// thousands of cells per input would leave the fuzzer no time for anything else.
constexpr std::uint64_t kMaxExpandedCells = 2000;

}  // namespace

int FuzzMatrix(const std::uint8_t* data, std::size_t size) {
  if (size > config::kMaxMatrixFileBytes) return 0;
  auto matrix = config::ParseMatrix(Text(data, size), "fuzz.yaml");
  if (!matrix.ok()) {
    DLBENCH_CHECK(!matrix.error().message.empty(), "an error says what is wrong");
    return 0;
  }
  const std::uint64_t cells = plan::MaxCellCount(*matrix);
  if (cells > plan::kMaxCells) {
    DLBENCH_CHECK(!plan::Expand(*matrix).ok(), "a matrix over the cell limit is refused");
    return 0;
  }
  if (cells > kMaxExpandedCells) return 0;
  auto expanded = plan::Expand(*matrix);
  if (!expanded.ok()) return 0;
  DLBENCH_CHECK(expanded->cells.size() <= cells, "MaxCellCount bounds the plan");
  for (const plan::Cell& cell : expanded->cells) {
    DLBENCH_CHECK(plan::CellKey(cell.params) == cell.key, "a cell's key is the key of its parameters");
    const plan::Estimate estimate = plan::EstimateCell(cell, *matrix, {});
    DLBENCH_CHECK(std::isfinite(estimate.seconds) && estimate.seconds >= 0, "estimates are finite and >= 0");
    DLBENCH_CHECK(estimate.low_s <= estimate.seconds && estimate.seconds <= estimate.high_s,
                  "an estimate lies within its bounds");
    // Keys and labels go into JSON (the store, the progress file), which holds only UTF-8.
    DLBENCH_CHECK(
        ValidUtf8Prefix(cell.key) == cell.key.size() && ValidUtf8Prefix(cell.label) == cell.label.size(),
        "a cell's key and label are UTF-8");
    const std::string shown = TerminalSafe(cell.label);
    DLBENCH_CHECK(shown.find('\x1b') == std::string::npos, "no escape character reaches a terminal");
  }
  return 0;
}

int FuzzFrames(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  // The first byte chooses how the stream is cut: frames must reassemble from any pieces.
  const std::size_t piece = static_cast<std::size_t>(data[0] % 64) + 1;
  protocol::FrameReader reader;
  for (std::size_t at = 1; at < size;) {
    const std::size_t n = std::min(piece, size - at);
    reader.Feed(reinterpret_cast<const char*>(data + at), n);
    at += n;
    for (;;) {
      auto next = reader.Next();
      if (!next.ok()) return 0;  // the stream cannot be trusted after a protocol error
      if (!next->has_value()) break;
      const protocol::Frame& frame = **next;
      std::string again;
      if (frame.type == protocol::MessageType::kSteps) {
        auto batch = protocol::DecodeSteps(frame);
        if (!batch.ok()) continue;
        protocol::AppendStepsFrame(again, batch->rank, batch->records.data(), batch->records.size());
        DLBENCH_CHECK(again.size() == protocol::kFrameHeaderBytes + frame.payload.size() &&
                          again.compare(protocol::kFrameHeaderBytes, std::string::npos, frame.payload) == 0,
                      "a decoded STEPS frame re-encodes to its own bytes");
        continue;
      }
      if (frame.type == protocol::MessageType::kQueries) {
        auto batch = protocol::DecodeQueries(frame);
        if (!batch.ok()) continue;
        protocol::AppendQueriesFrame(again, batch->rank, batch->records.data(), batch->records.size());
        // Records longer than version 1's are read as their prefix, so only a payload of
        // version-1-sized records re-encodes to its own bytes; any decoded batch re-decodes equal.
        const bool own_size =
            frame.payload.size() ==
            protocol::kQueriesHeaderBytes + batch->records.size() * sizeof(protocol::QueryRecord);
        DLBENCH_CHECK(
            !own_size || again.compare(protocol::kFrameHeaderBytes, std::string::npos, frame.payload) == 0,
            "a decoded QUERIES frame of version-1 records re-encodes to its own bytes");
        auto again_batch = protocol::DecodeQueries(
            protocol::Frame{protocol::MessageType::kQueries, again.substr(protocol::kFrameHeaderBytes)});
        DLBENCH_CHECK(again_batch.ok() && again_batch->records.size() == batch->records.size() &&
                          std::memcmp(again_batch->records.data(), batch->records.data(),
                                      batch->records.size() * sizeof(protocol::QueryRecord)) == 0,
                      "a re-encoded QUERIES frame decodes to the same records");
        continue;
      }
      auto body = protocol::DecodeJson(frame);
      if (!body.ok()) continue;
      protocol::AppendJsonFrame(again, frame.type, *body);
      protocol::FrameReader reread;
      reread.Feed(again.data(), again.size());
      auto back = reread.Next();
      DLBENCH_CHECK(back.ok() && back->has_value() && (**back).type == frame.type,
                    "a frame we write reads back");
      auto body_back = protocol::DecodeJson(**back);
      DLBENCH_CHECK(body_back.ok() && *body_back == *body, "a JSON body survives being written and read");
    }
  }
  return 0;
}

int FuzzProgress(const std::uint8_t* data, std::size_t size) {
  auto progress = report::ParseProgress(Text(data, size));
  if (progress.ok()) DLBENCH_CHECK(progress->pid >= 0, "a parsed pid is a process id");
  return 0;
}

int FuzzTfRecord(const std::uint8_t* data, std::size_t size) {
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);
  std::int64_t next = 0;
  // 64 KiB: an input's length field beyond it is refused, as a real file's beyond the default is.
  const Status scanned = tfrecord::ScanRecords(
      bytes, "fuzz.tfrecord",
      [&](const tfrecord::RecordSpan& span, std::string_view record) {
        DLBENCH_CHECK(span.offset == next, "records are found back to back from the start");
        DLBENCH_CHECK(span.length == static_cast<std::int64_t>(record.size()),
                      "a span's length is its data's");
        const std::string framed = tfrecord::FrameRecord(record);
        DLBENCH_CHECK(bytes.substr(static_cast<std::size_t>(span.offset), framed.size()) == framed,
                      "a record re-frames to the bytes it was read from");
        next = span.offset + static_cast<std::int64_t>(framed.size());
        auto example = tfrecord::ParseImageExample(record);
        if (!example.ok()) return;
        auto again =
            tfrecord::ParseImageExample(tfrecord::EncodeImageExample(example->encoded, example->label));
        DLBENCH_CHECK(again.ok() && again->encoded == example->encoded && again->label == example->label,
                      "an Example re-encodes to the same image and label");
      },
      std::int64_t{1} << 16);
  if (scanned.ok())
    DLBENCH_CHECK(next == static_cast<std::int64_t>(size), "a clean scan covers the whole file");
  auto array = idx::ParseIdx(bytes, "fuzz.idx");
  if (array.ok()) {
    DLBENCH_CHECK(array->data.size() == array->count() * idx::ElementBytes(array->type),
                  "an IDX array holds its dimensions' product of elements");
  }
  return 0;
}

namespace {

// One MetricsServer for the whole fuzzing process, serving a store with one run and one cell on
// its own thread; inputs reach it through AddConnection.
class HttpHarness {
 public:
  HttpHarness() {
    auto opened = store::SqliteStore::Open(":memory:");
    DLBENCH_CHECK(opened.ok(), "an in-memory store opens");
    store_ = std::move(*opened);
    store::RunRecord run;
    run.name = "fuzz";
    run.status = record::RunStatus::kCompleted;
    run.environment_hash = "h";
    run.environment = {{"hostname", "fuzzhost"}};
    auto run_id = store_->BeginRun(run);
    DLBENCH_CHECK(run_id.ok(), "the run is stored");
    store::CellRecord cell;
    cell.run_id = *run_id;
    cell.cell_id = "model=m#r0";
    cell.key = "model=m";
    cell.label = "m";
    cell.params = {{"model", "m"}, {"batch_size", 8}};
    cell.outcome = record::Outcome::kOk;
    cell.verdict = record::Verdict::kValid;
    cell.metrics = {{std::string(record::metric::kSamplesPerS), 412.5, "1/s"},
                    {std::string(record::metric::kStepTimeP99Ns), 2e6, "ns"}};
    DLBENCH_CHECK(store_->PutCell(cell).ok(), "the cell is stored");
    report::ServeOptions options;
    options.listen = {"127.0.0.1", 0};
    options.db_path = "/nonexistent/dlbench-fuzz.db";  // no progress file
    // Requests that libmicrohttpd neither answers nor closes on end of input wait for this.
    options.connection_timeout_s = 1;
    server_ = std::make_unique<report::MetricsServer>(*store_, options);
    DLBENCH_CHECK(server_->Bind().ok(), "the server binds a loopback port");
    loop_ = std::thread([this] { (void)server_->Run(); });
  }
  ~HttpHarness() {
    server_->Stop();
    loop_.join();
  }
  report::MetricsServer& server() { return *server_; }

 private:
  std::unique_ptr<store::SqliteStore> store_;
  std::unique_ptr<report::MetricsServer> server_;
  std::thread loop_;
};

}  // namespace

int FuzzHttp(const std::uint8_t* data, std::size_t size) {
  static HttpHarness harness;
  int ends[2];
  DLBENCH_CHECK(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0, ends) == 0,
                "socketpair");
  harness.server().AddConnection(ends[0]);
  const int client = ends[1];
  // Write the request and read the answer together (either side may fill its buffer first),
  // then half-close: a server that has read everything and answered must close the connection.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  std::size_t sent = 0;
  bool write_closed = false;
  std::string answer;
  for (;;) {
    if (sent == size && !write_closed) {
      ::shutdown(client, SHUT_WR);
      write_closed = true;
    }
    pollfd p{client, static_cast<short>(POLLIN | (write_closed ? 0 : POLLOUT)), 0};
    (void)::poll(&p, 1, 100);
    if ((p.revents & POLLOUT) != 0 && !write_closed) {
      const ssize_t n = ::send(client, data + sent, size - sent, MSG_NOSIGNAL);
      if (n > 0) sent += static_cast<std::size_t>(n);
      if (n < 0 && errno != EAGAIN && errno != EINTR) sent = size;  // the server closed: stop sending
    }
    if ((p.revents & (POLLIN | POLLHUP | POLLERR)) != 0) {
      char buf[16384];
      const ssize_t n = ::recv(client, buf, sizeof buf, 0);
      if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR)) break;
      if (n > 0 && answer.size() < (1u << 20)) answer.append(buf, static_cast<std::size_t>(n));
    }
    DLBENCH_CHECK(std::chrono::steady_clock::now() < deadline, "the server closes every connection in time");
  }
  ::close(client);
  DLBENCH_CHECK(answer.empty() || answer.rfind("HTTP/1.", 0) == 0, "whatever the server answers is HTTP");
  return 0;
}

int FuzzProcfs(const std::uint8_t* data, std::size_t size) {
  const std::string text = Text(data, size);
  if (auto stat = monitor::ParseProcStat(text); stat.ok()) {
    const std::size_t open = text.find(" (");
    DLBENCH_CHECK(open != std::string::npos, "a parsed stat line has its ' ('");
    DLBENCH_CHECK(ParseUint(std::string_view(text).substr(0, open)) == static_cast<std::uint64_t>(stat->pid),
                  "a parsed stat line has the pid its text starts with");
  }
  if (auto cpu = monitor::ParseCpuTimes(text); cpu.ok()) {
    DLBENCH_CHECK(cpu->cpus >= 0, "a cpu count is not negative");
    DLBENCH_CHECK(cpu->has_steal || cpu->steal == 0, "steal is 0 where the line lacks it");
  }
  if (auto mem = monitor::ParseMemInfo(text); mem.ok()) {
    DLBENCH_CHECK(mem->total_bytes % 1024 == 0 && mem->available_bytes % 1024 == 0, "meminfo is in KiB");
  }
  (void)monitor::ParseSchedStatWaitNs(text);
  return 0;
}

}  // namespace dlbench::fuzz
