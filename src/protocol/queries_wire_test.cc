// The QUERIES frame (docs/protocol.md "QUERIES"): decoded from bytes written out by hand, so the
// test pins the wire layout itself rather than the encoder's idea of it.
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "protocol/wire.h"

namespace dlbench::protocol {
namespace {

void PutU32(std::string& out, std::uint32_t v) {
  for (int i = 0; i < 4; ++i) out.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
}
void PutI64(std::string& out, std::int64_t v) {
  const auto u = static_cast<std::uint64_t>(v);
  for (int i = 0; i < 8; ++i) out.push_back(static_cast<char>((u >> (8 * i)) & 0xff));
}

// One version-1 record, field by field in the documented order.
struct Fields {
  std::uint64_t id = 0;
  std::int64_t scheduled = 0, issued = 0, completed = 0;
  std::int64_t pre = 0, h2d = 0, compute = 0, d2h = 0, post = 0;
  std::uint32_t samples = 1, batch = 0, present = 0, reserved = 0;
};
void PutRecord(std::string& out, const Fields& f) {
  PutI64(out, static_cast<std::int64_t>(f.id));
  for (std::int64_t v : {f.scheduled, f.issued, f.completed, f.pre, f.h2d, f.compute, f.d2h, f.post}) {
    PutI64(out, v);
  }
  for (std::uint32_t v : {f.samples, f.batch, f.present, f.reserved}) PutU32(out, v);
}

std::string Payload(std::uint32_t rank, std::uint32_t version, std::uint32_t record_bytes,
                    const std::vector<Fields>& records, std::size_t padding = 0) {
  std::string p;
  PutU32(p, rank);
  PutU32(p, static_cast<std::uint32_t>(records.size()));
  PutU32(p, version);
  PutU32(p, record_bytes);
  for (const Fields& f : records) {
    PutRecord(p, f);
    p.append(padding, '\x7f');  // fields a later layout appended; a version-1 reader skips them
  }
  return p;
}

TEST(QueriesWireTest, DecodesHandWrittenBytes) {
  Fields a;
  a.id = 41;
  a.scheduled = 12'000'000'000'000LL;
  a.issued = a.scheduled + 250;
  a.completed = a.scheduled + 1'500'000;
  a.samples = 1;
  Fields b;
  b.id = 42;
  b.scheduled = 12'000'000'100'000LL;
  b.issued = b.scheduled;
  b.completed = b.scheduled + 900'000;
  b.pre = 10'000;
  b.h2d = 20'000;
  b.compute = 700'000;
  b.d2h = 30'000;
  b.post = 40'000;
  b.samples = 8;
  b.batch = 16;
  b.present = record::kQueryHasHostPre | record::kQueryHasH2d | record::kQueryHasCompute |
              record::kQueryHasD2h | record::kQueryHasHostPost;
  const std::string payload = Payload(3, 1, 88, {a, b});
  ASSERT_EQ(payload.size(), 16u + 2 * 88u);

  auto batch = DecodeQueries(Frame{MessageType::kQueries, payload});
  ASSERT_TRUE(batch.ok()) << batch.error().message;
  EXPECT_EQ(batch->rank, 3u);
  ASSERT_EQ(batch->records.size(), 2u);
  const QueryRecord& r0 = batch->records[0];
  EXPECT_EQ(r0.query_id, 41u);
  EXPECT_EQ(r0.scheduled_ns, 12'000'000'000'000LL);
  EXPECT_EQ(r0.issued_ns, 12'000'000'000'250LL);
  EXPECT_EQ(r0.completed_ns, 12'000'001'500'000LL);
  EXPECT_EQ(r0.samples, 1u);
  EXPECT_EQ(r0.present, 0u);
  const QueryRecord& r1 = batch->records[1];
  EXPECT_EQ(r1.query_id, 42u);
  EXPECT_EQ(r1.host_pre_ns, 10'000);
  EXPECT_EQ(r1.h2d_ns, 20'000);
  EXPECT_EQ(r1.compute_ns, 700'000);
  EXPECT_EQ(r1.d2h_ns, 30'000);
  EXPECT_EQ(r1.host_post_ns, 40'000);
  EXPECT_EQ(r1.samples, 8u);
  EXPECT_EQ(r1.batch_samples, 16u);
  EXPECT_EQ(r1.present, 0x1fu);
}

TEST(QueriesWireTest, EncoderWritesTheDocumentedLayout) {
  QueryRecord r;
  r.query_id = 7;
  r.scheduled_ns = 100;
  r.issued_ns = 150;
  r.completed_ns = 900;
  r.compute_ns = 600;
  r.samples = 2;
  r.batch_samples = 4;
  r.present = record::kQueryHasCompute;
  std::string frame;
  AppendQueriesFrame(frame, 5, &r, 1);
  Fields f;
  f.id = 7;
  f.scheduled = 100;
  f.issued = 150;
  f.completed = 900;
  f.compute = 600;
  f.samples = 2;
  f.batch = 4;
  f.present = record::kQueryHasCompute;
  std::string expected;
  PutU32(expected, 16 + 88);
  expected.push_back(10);  // type QUERIES, u16
  expected.push_back(0);
  expected.append(2, '\0');  // reserved
  expected += Payload(5, 1, 88, {f});
  EXPECT_EQ(frame, expected);

  FrameReader reader;
  reader.Feed(frame.data(), frame.size());
  auto next = reader.Next();
  ASSERT_TRUE(next.ok());
  ASSERT_TRUE(next->has_value());
  EXPECT_EQ((*next)->type, MessageType::kQueries);
  EXPECT_STREQ(MessageTypeName((*next)->type), "QUERIES");
}

TEST(QueriesWireTest, LongerRecordsOfTheSameVersionAreReadAsTheirPrefix) {
  Fields f;
  f.id = 9;
  f.scheduled = 1;
  f.issued = 2;
  f.completed = 3;
  auto batch = DecodeQueries(Frame{MessageType::kQueries, Payload(0, 1, 96, {f, f}, 8)});
  ASSERT_TRUE(batch.ok()) << batch.error().message;
  ASSERT_EQ(batch->records.size(), 2u);
  EXPECT_EQ(batch->records[1].query_id, 9u);
  EXPECT_EQ(batch->records[1].completed_ns, 3);
}

TEST(QueriesWireTest, EmptyBatchIsValid) {
  auto batch = DecodeQueries(Frame{MessageType::kQueries, Payload(2, 1, 88, {})});
  ASSERT_TRUE(batch.ok());
  EXPECT_EQ(batch->rank, 2u);
  EXPECT_TRUE(batch->records.empty());
}

// Each malformed payload is rejected with a message naming what is wrong.
TEST(QueriesWireTest, MalformedPayloadsAreProtocolErrors) {
  Fields good;
  good.id = 5;
  good.scheduled = 100;
  good.issued = 100;
  good.completed = 200;
  auto with = [&](auto change) {
    Fields f = good;
    change(f);
    return Payload(0, 1, 88, {f});
  };
  struct Case {
    std::string name;
    std::string payload;
    std::string message;
  };
  std::string truncated = Payload(0, 1, 88, {good});
  truncated.pop_back();
  std::string count_too_big = Payload(0, 1, 88, {good});
  count_too_big[4] = 2;
  const std::vector<Case> cases = {
      {"short header", std::string(15, '\0'), "shorter than its header"},
      {"truncated record", truncated, "does not match its record count 1"},
      {"count beyond the payload", count_too_big, "does not match its record count 2"},
      {"other version", Payload(0, 2, 88, {good}), "layout version 2"},
      {"record too small", Payload(0, 1, 80, {}), "record size 80"},
      {"record too large", Payload(0, 1, 5000, {}), "record size 5000"},
      {"issued before scheduled", with([](Fields& f) { f.issued = 99; }), "query 5 is issued before"},
      {"completed before issued", with([](Fields& f) { f.completed = 99; }), "query 5 completes before"},
      {"no samples", with([](Fields& f) { f.samples = 0; }), "query 5 has no samples"},
      {"unknown bit", with([](Fields& f) { f.present = 0x20; }), "bits 32"},
      {"negative duration", with([](Fields& f) {
         f.present = record::kQueryHasD2h;
         f.d2h = -1;
       }),
       "negative"},
  };
  for (const Case& c : cases) {
    auto batch = DecodeQueries(Frame{MessageType::kQueries, c.payload});
    ASSERT_FALSE(batch.ok()) << c.name;
    EXPECT_EQ(batch.error().kind, ErrorKind::kProtocol) << c.name;
    EXPECT_NE(batch.error().message.find(c.message), std::string::npos)
        << c.name << ": " << batch.error().message;
  }
  // A negative value whose bit is clear is "absent", not an error.
  EXPECT_TRUE(DecodeQueries(Frame{MessageType::kQueries, with([](Fields& f) { f.d2h = -1; })}).ok());
  EXPECT_FALSE(DecodeQueries(Frame{MessageType::kSteps, Payload(0, 1, 88, {})}).ok());
}

}  // namespace
}  // namespace dlbench::protocol
