// The input pipeline's parts without LibTorch: the JPEG codec against its source pixels, the crop
// geometry against torchvision's rules worked by hand, the sample order against tf.data's
// shuffle, and the folder and TFRecord sources on data sets made here (good and corrupt).
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <set>
#include <string>

#include "data/crop.h"
#include "data/dataset_writer.h"
#include "data/jpeg.h"
#include "data/shuffle.h"
#include "data/sources.h"
#include "tfrecord/example.h"
#include "tfrecord/record.h"

namespace dlbench::torchrunner::data {
namespace {

class TempDir : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/dlbench_data_XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
  }
  void TearDown() override {
    std::error_code ignored;
    std::filesystem::remove_all(dir_, ignored);
  }
  std::string ReadAll(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  }
  void WriteAll(const std::string& path, const std::string& bytes) {
    std::ofstream(path, std::ios::binary) << bytes;
  }
  std::string dir_;
};

// Mean absolute difference over a rectangle, per channel pooled.
double MeanAbsDiff(const RgbImage& a, const RgbImage& b, int x0, int y0, int x1, int y1) {
  double sum = 0;
  int n = 0;
  for (int y = y0; y < y1; ++y) {
    for (int x = x0; x < x1; ++x) {
      for (int c = 0; c < 3; ++c) {
        const std::size_t i = (static_cast<std::size_t>(y) * a.width + x) * 3 + c;
        sum += std::abs(static_cast<int>(a.pixels[i]) - static_cast<int>(b.pixels[i]));
        ++n;
      }
    }
  }
  return sum / n;
}

TEST(Jpeg, DecodedPixelsMatchTheSourceWithinJpegTolerance) {
  DatasetSpec spec;
  spec.width = 96;
  spec.height = 64;
  spec.quality = 95;
  spec.texture = 6;
  const RgbImage source = MakeImage(spec, 3, 1);
  JpegEncoder encoder;
  auto jpeg = encoder.Encode(source, spec.quality);
  ASSERT_TRUE(jpeg.ok()) << jpeg.error().message;
  JpegDecoder decoder;
  auto info = decoder.ReadHeader(*jpeg);
  ASSERT_TRUE(info.ok()) << info.error().message;
  EXPECT_EQ(info->width, 96);
  EXPECT_EQ(info->height, 64);
  RgbImage out;
  ASSERT_TRUE(decoder.Decode(*jpeg, {1, 1}, out).ok());
  ASSERT_EQ(out.width, 96);
  ASSERT_EQ(out.height, 64);
  // Quadrant interiors (8 pixels from the colour edges, where 4:2:0 chroma blurs): quality 95
  // keeps them within a few levels of the source; the whole image's error stays small too.
  EXPECT_LT(MeanAbsDiff(source, out, 8, 8, 40, 24), 4.0);
  EXPECT_LT(MeanAbsDiff(source, out, 56, 40, 88, 56), 4.0);
  EXPECT_LT(MeanAbsDiff(source, out, 0, 0, 96, 64), 8.0);
  // Channel order: the top-left interior is quadrant 0's colour, red first.
  const Rgb c0 = QuadrantColour(3, 0);
  const std::size_t p = (static_cast<std::size_t>(16) * 96 + 16) * 3;
  for (int c = 0; c < 3; ++c) EXPECT_NEAR(out.pixels[p + c], c0[c], 12) << c;

  RgbImage half;
  ASSERT_TRUE(decoder.Decode(*jpeg, {1, 2}, half).ok());
  EXPECT_EQ(half.width, 48);
  EXPECT_EQ(half.height, 32);
}

TEST(Jpeg, BadBytesAreErrorsNotCrashes) {
  JpegDecoder decoder;
  RgbImage out;
  for (const std::string& bad :
       {std::string(), std::string("not a jpeg at all"), std::string("\xff\xd8\xff", 3)}) {
    Status s = decoder.Decode(bad, {1, 1}, out);
    ASSERT_FALSE(s.ok());
    EXPECT_EQ(s.error().kind, ErrorKind::kInvalidInput);
  }
  // Large and textured enough that half the file is past the headers, inside the entropy-coded
  // data (a flat 64x48 image's tables alone are over half of it).
  DatasetSpec spec;
  spec.width = 256;
  spec.height = 192;
  spec.texture = 24;
  JpegEncoder encoder;
  auto jpeg = encoder.Encode(MakeImage(spec, 0, 0), 90);
  ASSERT_TRUE(jpeg.ok());
  ASSERT_GT(jpeg->size(), 8000u);
  const std::string truncated = jpeg->substr(0, jpeg->size() / 2);
  Status s = decoder.Decode(truncated, {1, 1}, out);
  ASSERT_FALSE(s.ok()) << "a truncated stream is corrupt, not a grey half image";
  EXPECT_NE(s.error().message.find("corrupt JPEG"), std::string::npos) << s.error().message;
}

TEST(Jpeg, DownScalesAreSortedAndIncludeTheUsualOnes) {
  const auto& scales = DownScales();
  ASSERT_FALSE(scales.empty());
  for (std::size_t i = 1; i < scales.size(); ++i) {
    EXPECT_LT(scales[i - 1].num * scales[i].denom, scales[i].num * scales[i - 1].denom);
  }
  for (Scale s : {Scale{1, 8}, Scale{1, 4}, Scale{1, 2}, Scale{1, 1}}) {
    EXPECT_NE(std::find(scales.begin(), scales.end(), s), scales.end()) << s.num << "/" << s.denom;
  }
  EXPECT_EQ(ScaledDim(375, {5, 8}), 235);  // ceil(375 * 5 / 8) = ceil(234.375)
  EXPECT_EQ(ScaledDim(500, {1, 8}), 63);
}

TEST(Crop, CenterCropIsResizeThenCenterCropAsOneBox) {
  // 256x256 -> Resize(256) is the identity -> CenterCrop(224) at (16, 16).
  EXPECT_EQ(CenterCropBox(256, 256, 224, 224), (CropBox{16, 16, 224, 224}));
  // 500x375: the shorter side 375 -> 256, k = 256/375; 224 / k = 328.1 -> 328, centred.
  EXPECT_EQ(CenterCropBox(500, 375, 224, 224), (CropBox{86, 23, 328, 328}));
  // 32x32 output: Resize(round(32 / 0.875) = 37); a 64x48 image: k = 37/48, 32 / k = 41.5 -> 42.
  EXPECT_EQ(CenterCropBox(64, 48, 32, 32), (CropBox{11, 3, 42, 42}));
}

TEST(Crop, RandomResizedCropStaysInTheImageWithinItsAreaAndRatio) {
  for (std::uint64_t seed = 0; seed < 500; ++seed) {
    SplitMix64 rng(seed);
    const CropBox b = RandomResizedCropBox(500, 375, rng);
    ASSERT_GE(b.x, 0);
    ASSERT_GE(b.y, 0);
    ASSERT_LE(b.x + b.width, 500);
    ASSERT_LE(b.y + b.height, 375);
    const double share = static_cast<double>(b.width) * b.height / (500.0 * 375.0);
    const double ratio = static_cast<double>(b.width) / b.height;
    // Rounding of width and height moves the share and the ratio by a little.
    EXPECT_GE(share, 0.08 * 0.97) << seed;
    EXPECT_GE(ratio, 0.75 * 0.95) << seed;
    EXPECT_LE(ratio, 4.0 / 3.0 * 1.05) << seed;
    SplitMix64 again(seed);
    EXPECT_EQ(RandomResizedCropBox(500, 375, again), b) << "a seed gives one crop";
  }
  // A strip no crop of ratio 3/4..4/3 with 8% of its area fits in: the fallback is the central
  // crop with the ratio clamped to 4/3: 10 x round(10 * 4/3) = 13 wide.
  SplitMix64 rng(1);
  EXPECT_EQ(RandomResizedCropBox(1000, 10, rng), (CropBox{493, 0, 13, 10}));
}

TEST(Crop, ScaledDecodeIsTheSmallestThatKeepsTheCropLargeEnough) {
  // 328 x 3/4 = 246 >= 224, while 328 x 5/8 = 205 is not.
  EXPECT_EQ(ChooseScale({86, 23, 328, 328}, 224, 224), (Scale{3, 4}));
  EXPECT_EQ(ChooseScale({0, 0, 2000, 1800}, 224, 224), (Scale{1, 8}));  // 250 x 225
  EXPECT_EQ(ChooseScale({0, 0, 100, 100}, 224, 224), (Scale{1, 1}));    // upscaled at any scale
  const CropBox s = ScaleBox({86, 23, 328, 328}, 500, 375, {3, 4});     // decoded at 375 x 282
  EXPECT_EQ(s, (CropBox{64, 17, 246, 247}));
  EXPECT_GE(s.width, 224);
  EXPECT_LE(s.x + s.width, 375);
  EXPECT_LE(s.y + s.height, 282);
}

TEST(Shuffle, NoBufferKeepsTheFileOrderEveryEpoch) {
  for (std::int64_t buffer : {0, 1}) {
    ShuffleStream s(5, buffer, 9);
    for (int epoch = 0; epoch < 3; ++epoch) {
      for (std::int64_t i = 0; i < 5; ++i) EXPECT_EQ(s.Next(), i);
    }
  }
}

TEST(Shuffle, EachEpochIsAPermutationReshuffledAndSeeded) {
  const std::int64_t n = 50;
  ShuffleStream a(n, 1000, 7), b(n, 1000, 7), c(n, 1000, 8);
  std::vector<std::vector<std::int64_t>> epochs;
  bool seeds_differ = false;
  for (int e = 0; e < 3; ++e) {
    std::vector<std::int64_t> order;
    for (std::int64_t i = 0; i < n; ++i) {
      order.push_back(a.Next());
      EXPECT_EQ(b.Next(), order.back());
      seeds_differ |= c.Next() != order.back();
    }
    std::vector<std::int64_t> sorted = order;
    std::sort(sorted.begin(), sorted.end());
    for (std::int64_t i = 0; i < n; ++i) ASSERT_EQ(sorted[static_cast<std::size_t>(i)], i);
    epochs.push_back(order);
  }
  EXPECT_NE(epochs[0], epochs[1]);
  EXPECT_TRUE(seeds_differ);
}

TEST(Shuffle, ASmallBufferOnlyMovesSamplesSoFar) {
  // tf.data's buffer of k: the p-th output of an epoch was among the first p + k inputs.
  const std::int64_t n = 200, k = 10;
  ShuffleStream s(n, k, 3);
  std::set<std::int64_t> seen;
  for (std::int64_t p = 0; p < n; ++p) {
    const std::int64_t i = s.Next();
    EXPECT_LT(i, p + k) << p;
    EXPECT_TRUE(seen.insert(i).second);
  }
  EXPECT_EQ(seen.size(), static_cast<std::size_t>(n));
}

TEST_F(TempDir, JpegFolderIsReadAsImageFolderWould) {
  DatasetSpec spec;
  spec.classes = 3;
  spec.per_class = 2;
  const std::string root = dir_ + "/imgs";
  ASSERT_TRUE(WriteJpegFolder(root, spec).ok());
  // A nested folder (found recursively), a file that is not a JPEG and a FIFO (both ignored).
  ASSERT_EQ(mkdir((root + "/class_001/deeper").c_str(), 0755), 0);
  WriteAll(root + "/class_001/deeper/A.JPEG", ReadAll(root + "/class_001/img_00000.jpg"));
  WriteAll(root + "/class_002/notes.txt", "not an image");
  ASSERT_EQ(mkfifo((root + "/class_002/pipe.jpg").c_str(), 0600), 0);
  auto source = OpenJpegFolder(root + "/");
  ASSERT_TRUE(source.ok()) << source.error().message;
  const SampleSource& s = **source;
  EXPECT_EQ(s.num_classes(), 3);
  ASSERT_EQ(s.size(), 7);
  // Sorted by folder, then name: class_001's own files come before its sub-folder's.
  EXPECT_EQ(s.Where(0), root + "/class_000/img_00000.jpg");
  EXPECT_EQ(s.Where(2), root + "/class_001/img_00000.jpg");
  EXPECT_EQ(s.Where(4), root + "/class_001/deeper/A.JPEG");
  std::string bytes;
  std::int64_t label = -1;
  const std::int64_t expected_labels[] = {0, 0, 1, 1, 1, 2, 2};
  for (std::int64_t i = 0; i < s.size(); ++i) {
    ASSERT_TRUE(s.Read(i, bytes, label).ok());
    EXPECT_EQ(label, expected_labels[i]) << i;
    EXPECT_EQ(bytes, ReadAll(s.Where(i)));
  }
  EXPECT_EQ(s.Describe().value("ignored_files", 0), 2);
}

TEST_F(TempDir, UnusableFoldersAreClearErrors) {
  auto missing = OpenJpegFolder(dir_ + "/nope");
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.error().message.find(dir_ + "/nope"), std::string::npos);
  auto empty = OpenJpegFolder(dir_);
  ASSERT_FALSE(empty.ok());
  EXPECT_NE(empty.error().message.find("holds no class sub-folder"), std::string::npos)
      << empty.error().message;
  ASSERT_EQ(mkdir((dir_ + "/cat").c_str(), 0755), 0);
  WriteAll(dir_ + "/cat/readme.txt", "x");
  auto no_jpeg = OpenJpegFolder(dir_);
  ASSERT_FALSE(no_jpeg.ok());
  EXPECT_NE(no_jpeg.error().message.find("no .jpg/.jpeg file in the class folder(s) cat"), std::string::npos)
      << no_jpeg.error().message;
  WriteAll(dir_ + "/file", "x");
  auto not_dir = OpenJpegFolder(dir_ + "/file");
  ASSERT_FALSE(not_dir.ok());
  EXPECT_NE(not_dir.error().message.find("is not a folder"), std::string::npos);
}

TEST_F(TempDir, TfRecordsHoldTheImagesAndLabelsAsWritten) {
  DatasetSpec spec;
  spec.classes = 3;
  spec.per_class = 3;
  ASSERT_TRUE(WriteTfRecords(dir_ + "/train", 2, spec, /*label_offset=*/1).ok());
  auto source = OpenTfRecords(dir_ + "/train-*", false);
  ASSERT_TRUE(source.ok()) << source.error().message;
  const SampleSource& s = **source;
  ASSERT_EQ(s.size(), 9);
  EXPECT_EQ(s.num_classes(), -1);
  JpegEncoder encoder;
  std::string bytes;
  std::int64_t label = 0;
  // Sample n went to file n % 2 as (class n % 3, index n / 3); file 0 is read first.
  std::vector<std::pair<std::int64_t, std::string>> expected;
  for (int file = 0; file < 2; ++file) {
    for (int n = file; n < 9; n += 2) {
      auto jpeg = encoder.Encode(MakeImage(spec, n % 3, n / 3), spec.quality);
      ASSERT_TRUE(jpeg.ok());
      expected.emplace_back(n % 3 + 1, *jpeg);
    }
  }
  for (std::int64_t i = 0; i < s.size(); ++i) {
    ASSERT_TRUE(s.Read(i, bytes, label).ok()) << s.Where(i);
    EXPECT_EQ(label, expected[static_cast<std::size_t>(i)].first) << i;
    EXPECT_EQ(bytes, expected[static_cast<std::size_t>(i)].second) << i;
  }
  EXPECT_NE(s.Where(1).find("train-00000-of-00002, record at byte "), std::string::npos) << s.Where(1);
}

TEST_F(TempDir, BrokenTfRecordsAreErrorsNamingFileAndOffset) {
  EXPECT_FALSE(OpenTfRecords(dir_ + "/none-*", false).ok());
  const std::string good = tfrecord::FrameRecord(tfrecord::EncodeImageExample("jpeg bytes", 1));
  // Truncated: found when the file is indexed; with skip_corrupt the intact record stays.
  WriteAll(dir_ + "/cut.tfrecord", good + good.substr(0, good.size() - 3));
  auto cut = OpenTfRecords(dir_ + "/cut.tfrecord", false);
  ASSERT_FALSE(cut.ok());
  EXPECT_NE(cut.error().message.find(dir_ + "/cut.tfrecord: truncated record at byte " +
                                     std::to_string(good.size())),
            std::string::npos)
      << cut.error().message;
  auto skipped = OpenTfRecords(dir_ + "/cut.tfrecord", true);
  ASSERT_TRUE(skipped.ok()) << skipped.error().message;
  EXPECT_EQ((*skipped)->size(), 1);
  ASSERT_EQ((*skipped)->open_problems().size(), 1u);
  EXPECT_NE((*skipped)->open_problems()[0].message.find("truncated record at byte"), std::string::npos);

  // A bad data CRC and a missing key: found when the record is read.
  std::string bad_crc = good;
  bad_crc[tfrecord::kHeaderBytes + 2] ^= 0x10;
  const std::string no_label = tfrecord::FrameRecord(
      tfrecord::EncodeImageExample("jpeg bytes", 1, tfrecord::ImageKeys{"image/encoded", "other/label"}));
  WriteAll(dir_ + "/bad.tfrecord", good + bad_crc + no_label);
  auto bad = OpenTfRecords(dir_ + "/bad.tfrecord", false);
  ASSERT_TRUE(bad.ok()) << bad.error().message;
  std::string bytes;
  std::int64_t label = 0;
  EXPECT_TRUE((*bad)->Read(0, bytes, label).ok());
  Status crc = (*bad)->Read(1, bytes, label);
  ASSERT_FALSE(crc.ok());
  EXPECT_NE(crc.error().message.find("bad.tfrecord: corrupt record at byte " + std::to_string(good.size())),
            std::string::npos)
      << crc.error().message;
  Status key = (*bad)->Read(2, bytes, label);
  ASSERT_FALSE(key.ok());
  EXPECT_NE(key.error().message.find("record at byte " + std::to_string(2 * good.size())), std::string::npos)
      << key.error().message;
  EXPECT_NE(key.error().message.find("no feature 'image/class/label'"), std::string::npos)
      << key.error().message;
}

}  // namespace
}  // namespace dlbench::torchrunner::data
