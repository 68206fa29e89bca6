// The TFRecord framing and tf.train.Example, checked against the formats' definitions: records
// whose bytes are spelt out here (and a bitwise CRC-32C written from the polynomial), known CRC
// vectors (RFC 3720 B.4), Boost.CRC as a second implementation, and every kind of corruption.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <boost/crc.hpp>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include "tfrecord/crc32c.h"
#include "tfrecord/example.h"
#include "tfrecord/record.h"

namespace dlbench::tfrecord {
namespace {

using Bytes = std::vector<unsigned char>;

std::string Str(const Bytes& b) { return std::string(b.begin(), b.end()); }

// CRC-32C bit by bit from its definition: reflected polynomial 0x82F63B78, initial value and
// final XOR 0xFFFFFFFF. Independent of ISA-L.
std::uint32_t BitwiseCrc32c(const std::string& s) {
  std::uint32_t c = 0xffffffffu;
  for (unsigned char b : s) {
    c ^= b;
    for (int k = 0; k < 8; ++k) c = (c >> 1) ^ (0x82f63b78u & (0u - (c & 1u)));
  }
  return c ^ 0xffffffffu;
}

std::uint32_t BoostCrc32c(const std::string& s) {
  boost::crc_optimal<32, 0x1EDC6F41, 0xFFFFFFFF, 0xFFFFFFFF, true, true> crc;
  crc.process_bytes(s.data(), s.size());
  return crc.checksum();
}

// A record framed by hand from the definition: u64 length LE, masked CRC of those 8 bytes, the
// data, masked CRC of the data; the mask is TensorFlow's (rotate right 15, add 0xa282ead8).
std::string HandFrame(const std::string& data) {
  auto le = [](std::uint64_t v, int n) {
    std::string out;
    for (int i = 0; i < n; ++i) out += static_cast<char>((v >> (8 * i)) & 0xff);
    return out;
  };
  auto mask = [](std::uint32_t c) { return ((c >> 15) | (c << 17)) + 0xa282ead8u; };
  const std::string length = le(data.size(), 8);
  return length + le(mask(BitwiseCrc32c(length)), 4) + data + le(mask(BitwiseCrc32c(data)), 4);
}

class TempFiles : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/dlbench_tfrecord_XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
  }
  void TearDown() override {
    std::error_code ignored;
    std::filesystem::remove_all(dir_, ignored);
  }
  std::string Write(const std::string& name, const std::string& bytes) {
    const std::string path = dir_ + "/" + name;
    std::ofstream(path, std::ios::binary) << bytes;
    return path;
  }
  std::string dir_;
};

TEST(Crc32c, KnownVectors) {
  EXPECT_EQ(Crc32c(std::string_view("123456789")), 0xE3069283u);  // the CRC catalogue's check value
  EXPECT_EQ(Crc32c(std::string_view("")), 0u);
  // RFC 3720 (iSCSI), appendix B.4.
  EXPECT_EQ(Crc32c(std::string(32, '\0')), 0x8A9136AAu);
  EXPECT_EQ(Crc32c(std::string(32, '\xff')), 0x62A8AB43u);
  std::string up, down;
  for (int i = 0; i < 32; ++i) {
    up += static_cast<char>(i);
    down += static_cast<char>(31 - i);
  }
  EXPECT_EQ(Crc32c(up), 0x46DD794Eu);
  EXPECT_EQ(Crc32c(down), 0x113FDB5Cu);
}

TEST(Crc32c, AgreesWithTwoOtherImplementationsAndExtends) {
  std::mt19937 gen(3);
  for (std::size_t size : {1u, 7u, 8u, 15u, 16u, 63u, 64u, 1000u, 4097u, 100000u}) {
    std::string s(size, '\0');
    for (char& c : s) c = static_cast<char>(gen());
    const std::uint32_t crc = Crc32c(s);
    EXPECT_EQ(crc, BitwiseCrc32c(s)) << size;
    EXPECT_EQ(crc, BoostCrc32c(s)) << size;
    const std::size_t cut = size / 3;
    EXPECT_EQ(ExtendCrc32c(Crc32c(s.data(), cut), s.data() + cut, size - cut), crc) << size;
  }
}

TEST(Crc32c, MaskIsTensorFlows) {
  EXPECT_EQ(MaskCrc(0), 0xa282ead8u);
  EXPECT_EQ(MaskCrc(0x00008000u), 0x00000001u + 0xa282ead8u);  // bit 15 rotates to bit 0
  for (std::uint32_t c : {0u, 1u, 0xE3069283u, 0xffffffffu, 0x80000000u}) EXPECT_EQ(UnmaskCrc(MaskCrc(c)), c);
}

// Bytes spelt out: "abc" and an empty record. The CRC values were computed with BitwiseCrc32c
// above and agree with Boost.CRC and ISA-L (the tests before this one).
const Bytes kAbcRecord = {0x03, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,    // length 3, little-endian
                          0xb0, 0x99, 0x49, 0x0e,                            // masked CRC of the length
                          0x61, 0x62, 0x63,                                  // "abc"
                          0x6e, 0x57, 0xf1, 0x21};                           // masked CRC of "abc"
const Bytes kEmptyRecord = {0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,  // length 0
                            0x29, 0x03, 0x98, 0x07,                          // masked CRC of 8 zeros
                            0xd8, 0xea, 0x82, 0xa2};                         // masked CRC of nothing

TEST(Framing, SpeltOutBytesMatchTheDefinitionAndTheWriter) {
  EXPECT_EQ(HandFrame("abc"), Str(kAbcRecord));
  EXPECT_EQ(HandFrame(""), Str(kEmptyRecord));
  EXPECT_EQ(FrameRecord("abc"), Str(kAbcRecord));
  EXPECT_EQ(FrameRecord(""), Str(kEmptyRecord));
  const std::string big(300, 'x');
  EXPECT_EQ(FrameRecord(big), HandFrame(big));
}

TEST(Framing, ScanReadsHandFramedRecordsInOrder) {
  const std::string bytes = Str(kAbcRecord) + Str(kEmptyRecord) + HandFrame(std::string(300, 'y'));
  std::vector<std::pair<RecordSpan, std::string>> seen;
  Status s = ScanRecords(bytes, "mem", [&](const RecordSpan& span, std::string_view data) {
    seen.emplace_back(span, std::string(data));
  });
  ASSERT_TRUE(s.ok()) << s.error().message;
  ASSERT_EQ(seen.size(), 3u);
  EXPECT_EQ(seen[0].first, (RecordSpan{0, 3}));
  EXPECT_EQ(seen[0].second, "abc");
  EXPECT_EQ(seen[1].first, (RecordSpan{19, 0}));
  EXPECT_EQ(seen[1].second, "");
  EXPECT_EQ(seen[2].first, (RecordSpan{35, 300}));
  EXPECT_EQ(seen[2].second, std::string(300, 'y'));
  EXPECT_TRUE(ScanRecords("", "empty", [](const RecordSpan&, std::string_view) { FAIL(); }).ok());
}

TEST_F(TempFiles, FileReaderIndexesAndReadsHandFramedRecords) {
  const std::string path = Write("hand.tfrecord", Str(kAbcRecord) + HandFrame("hello") + Str(kEmptyRecord));
  auto file = RecordFile::Open(path);
  ASSERT_TRUE(file.ok()) << file.error().message;
  auto spans = file->Index();
  ASSERT_TRUE(spans.ok()) << spans.error().message;
  ASSERT_EQ(spans->size(), 3u);
  EXPECT_EQ((*spans)[1], (RecordSpan{19, 5}));
  EXPECT_EQ((*spans)[2], (RecordSpan{40, 0}));
  std::string data = "stale";
  ASSERT_TRUE(file->ReadRecord((*spans)[0], data).ok());
  EXPECT_EQ(data, "abc");
  ASSERT_TRUE(file->ReadRecord((*spans)[1], data).ok());
  EXPECT_EQ(data, "hello");
  ASSERT_TRUE(file->ReadRecord((*spans)[2], data).ok());
  EXPECT_EQ(data, "");
}

TEST_F(TempFiles, WriterRoundTripsAndWritesExactlyTheFraming) {
  const std::string path = dir_ + "/w.tfrecord";
  std::vector<std::string> records = {"abc", "", std::string(5000, 'z')};
  std::string expected;
  {
    auto writer = RecordWriter::Create(path);
    ASSERT_TRUE(writer.ok()) << writer.error().message;
    for (const auto& r : records) {
      ASSERT_TRUE(writer->Append(r).ok());
      expected += HandFrame(r);
    }
    ASSERT_TRUE(writer->Close().ok());
    EXPECT_EQ(writer->bytes_written(), static_cast<std::int64_t>(expected.size()));
  }
  std::ifstream in(path, std::ios::binary);
  const std::string written((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_EQ(written, expected);
  auto file = RecordFile::Open(path);
  ASSERT_TRUE(file.ok());
  auto spans = file->Index();
  ASSERT_TRUE(spans.ok());
  ASSERT_EQ(spans->size(), records.size());
  std::string data;
  for (std::size_t i = 0; i < records.size(); ++i) {
    ASSERT_TRUE(file->ReadRecord((*spans)[i], data).ok());
    EXPECT_EQ(data, records[i]);
  }
}

struct CorruptCase {
  const char* name;
  std::string bytes;
  std::int64_t bad_offset;    // the offset the message must name
  const char* what;           // a phrase the message must hold
  std::size_t intact_prefix;  // records Index keeps before the bad one
  bool index_sees_it;         // false: only ReadRecord (the data CRC) finds it
};

std::vector<CorruptCase> CorruptCases() {
  const std::string good = Str(kAbcRecord);  // 19 bytes
  std::string bad_length_crc = HandFrame("hello");
  bad_length_crc[9] ^= 0x01;
  std::string bad_data_crc = HandFrame("hello");
  bad_data_crc[12] ^= 0x20;  // "hello" -> "Hello": the stored CRC no longer matches
  std::string huge = HandFrame("x");
  huge[7] = 0x01;  // length 2^56 + 1; its CRC is then wrong too, so fix the CRC to reach the limit
  {
    auto le = [](std::uint32_t v) {
      std::string o;
      for (int i = 0; i < 4; ++i) o += static_cast<char>((v >> (8 * i)) & 0xff);
      return o;
    };
    huge.replace(8, 4, le(MaskCrc(BitwiseCrc32c(huge.substr(0, 8)))));
  }
  return {
      {"truncated header", good + good.substr(0, 5), 19, "truncated record at byte 19", 1, true},
      {"truncated data", good + HandFrame("hello").substr(0, 15), 19, "truncated record at byte 19", 1, true},
      {"missing data CRC", good + HandFrame("hello").substr(0, 17), 19, "truncated record at byte 19", 1,
       true},
      {"bad length CRC", good + bad_length_crc + good, 19, "the length's CRC does not match", 1, true},
      {"bad data CRC", good + bad_data_crc + good, 19, "CRC of its 5 data bytes does not match", 1, false},
      {"length beyond the limit", huge, 0, "more than the limit", 0, true},
  };
}

TEST_F(TempFiles, EveryCorruptionIsAnErrorNamingTheFileAndOffset) {
  for (const CorruptCase& c : CorruptCases()) {
    SCOPED_TRACE(c.name);
    Status scan = ScanRecords(c.bytes, "mem.tfrecord", [](const RecordSpan&, std::string_view) {});
    ASSERT_FALSE(scan.ok());
    EXPECT_EQ(scan.error().kind, ErrorKind::kInvalidInput);
    EXPECT_NE(scan.error().message.find("mem.tfrecord: "), std::string::npos) << scan.error().message;
    EXPECT_NE(scan.error().message.find(c.what), std::string::npos) << scan.error().message;
    EXPECT_NE(scan.error().message.find("at byte " + std::to_string(c.bad_offset)), std::string::npos)
        << scan.error().message;

    const std::string path = Write("c.tfrecord", c.bytes);
    auto file = RecordFile::Open(path);
    ASSERT_TRUE(file.ok());
    std::vector<RecordSpan> prefix;
    auto spans = file->Index(kDefaultMaxRecordBytes, &prefix);
    if (c.index_sees_it) {
      ASSERT_FALSE(spans.ok());
      EXPECT_NE(spans.error().message.find(path + ": "), std::string::npos) << spans.error().message;
      EXPECT_NE(spans.error().message.find("at byte " + std::to_string(c.bad_offset)), std::string::npos)
          << spans.error().message;
      EXPECT_EQ(prefix.size(), c.intact_prefix);
      continue;
    }
    ASSERT_TRUE(spans.ok()) << spans.error().message;
    std::string data;
    Status read = file->ReadRecord((*spans)[1], data);
    ASSERT_FALSE(read.ok());
    EXPECT_NE(read.error().message.find(path + ": corrupt record at byte 19"), std::string::npos)
        << read.error().message;
    EXPECT_TRUE(file->ReadRecord((*spans)[2], data).ok()) << "the records after a bad one stay readable";
  }
}

TEST_F(TempFiles, NonRegularFilesAreRefusedWithoutBlocking) {
  const std::string fifo = dir_ + "/fifo";
  ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0);
  auto file = RecordFile::Open(fifo);  // a FIFO with no writer would block a plain open
  ASSERT_FALSE(file.ok());
  EXPECT_EQ(file.error().kind, ErrorKind::kInvalidInput);
  EXPECT_NE(file.error().message.find("not a regular file"), std::string::npos);
  auto missing = RecordFile::Open(dir_ + "/nope");
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.error().kind, ErrorKind::kNotFound);

  auto writer = RecordWriter::Create(fifo);
  ASSERT_FALSE(writer.ok());
  EXPECT_NE(writer.error().message.find("refusing to replace"), std::string::npos);
  const std::string target = Write("target", "keep");
  const std::string link = dir_ + "/link";
  ASSERT_EQ(symlink(target.c_str(), link.c_str()), 0);
  EXPECT_FALSE(RecordWriter::Create(link).ok());
  std::ifstream in(target);
  std::string kept;
  in >> kept;
  EXPECT_EQ(kept, "keep");
}

// Protobuf's wire format by hand (../shared/notes/libtorch-loadgen-nvml-facts.md §8.3).
std::string Varint(std::uint64_t v) {
  std::string out;
  while (v >= 0x80) {
    out += static_cast<char>((v & 0x7f) | 0x80);
    v >>= 7;
  }
  out += static_cast<char>(v);
  return out;
}
std::string Field(int number, const std::string& payload) {  // length-delimited (wire type 2)
  return Varint((static_cast<std::uint64_t>(number) << 3) | 2) + Varint(payload.size()) + payload;
}
std::string MapEntry(const std::string& key, const std::string& feature) {
  return Field(1, Field(1, key) + Field(2, feature));
}
std::string BytesFeature(const std::string& value) { return Field(1, Field(1, value)); }
std::string PackedInt64Feature(std::int64_t value) {
  return Field(3, Field(1, Varint(static_cast<std::uint64_t>(value))));
}
std::string UnpackedInt64Feature(std::int64_t value) {
  return Field(3, Varint(0x08) + Varint(static_cast<std::uint64_t>(value)));
}
std::string HandExample(const std::vector<std::string>& entries) {
  std::string features;
  for (const auto& e : entries) features += e;
  return Field(1, features);
}

TEST(Example, HandEncodedExamplesDecode) {
  const std::string jpeg = std::string("\xff\xd8\xff\xe0 not really a jpeg", 22);
  for (const std::string& label :
       {PackedInt64Feature(7), UnpackedInt64Feature(7), PackedInt64Feature(-3), PackedInt64Feature(1000)}) {
    const std::string bytes =
        HandExample({MapEntry("image/format", BytesFeature("JPEG")),
                     MapEntry("image/encoded", BytesFeature(jpeg)), MapEntry("image/class/label", label)});
    auto ex = ParseImageExample(bytes);
    ASSERT_TRUE(ex.ok()) << ex.error().message;
    EXPECT_EQ(ex->encoded, jpeg);
    EXPECT_TRUE(ex->label == 7 || ex->label == -3 || ex->label == 1000) << ex->label;
  }
  auto negative = ParseImageExample(HandExample(
      {MapEntry("image/encoded", BytesFeature("x")), MapEntry("image/class/label", PackedInt64Feature(-3))}));
  ASSERT_TRUE(negative.ok());
  EXPECT_EQ(negative->label, -3);
}

TEST(Example, EncoderRoundTripsWithOtherKeys) {
  ImageKeys keys{"img", "cls"};
  const std::string bytes = EncodeImageExample("payload", 42, keys);
  auto ex = ParseImageExample(bytes, keys);
  ASSERT_TRUE(ex.ok()) << ex.error().message;
  EXPECT_EQ(ex->encoded, "payload");
  EXPECT_EQ(ex->label, 42);
  EXPECT_FALSE(ParseImageExample(bytes).ok()) << "the default keys are not in it";
}

TEST(Example, BadExamplesAreClearErrors) {
  const std::string image = MapEntry("image/encoded", BytesFeature("x"));
  const std::string label = MapEntry("image/class/label", PackedInt64Feature(1));
  struct Case {
    const char* name;
    std::string bytes;
    const char* what;
  };
  const std::vector<Case> cases = {
      {"garbage", "\xff\xff\xff\xff", "not a tf.train.Example"},
      {"no image", HandExample({label}), "no feature 'image/encoded'"},
      {"no label", HandExample({image}), "no feature 'image/class/label'"},
      {"label as bytes", HandExample({image, MapEntry("image/class/label", BytesFeature("1"))}),
       "'image/class/label' is a bytes_list, not an int64_list"},
      {"image as int64", HandExample({MapEntry("image/encoded", PackedInt64Feature(1)), label}),
       "'image/encoded' is an int64_list, not a bytes_list"},
      {"two images", HandExample({MapEntry("image/encoded", Field(1, Field(1, "a") + Field(1, "b"))), label}),
       "holds 2 values"},
      {"empty feature", HandExample({MapEntry("image/encoded", ""), label}), "is empty, not a bytes_list"},
  };
  for (const Case& c : cases) {
    auto ex = ParseImageExample(c.bytes);
    ASSERT_FALSE(ex.ok()) << c.name;
    EXPECT_EQ(ex.error().kind, ErrorKind::kInvalidInput) << c.name;
    EXPECT_NE(ex.error().message.find(c.what), std::string::npos) << c.name << ": " << ex.error().message;
  }
}

}  // namespace
}  // namespace dlbench::tfrecord
