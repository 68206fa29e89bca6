// The pipeline on data sets made here: labels and pixels arrive as written (through decode, crop,
// resize, flip and normalisation), the work is split across workers as documented, the contents
// do not depend on how many workers made them, corrupt input is an error naming the file (or,
// with skip_corrupt, counted), the cache serves later epochs, and the prefetch bound holds.
#include "data/pipeline.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <thread>

#include "data/dataset_writer.h"
#include "tfrecord/example.h"
#include "tfrecord/record.h"

namespace dlbench::torchrunner::data {
namespace {

constexpr double kMean[3] = {0.485, 0.456, 0.406};
constexpr double kStd[3] = {0.229, 0.224, 0.225};

class PipelineTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/dlbench_pipeline_XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
  }
  void TearDown() override {
    std::error_code ignored;
    std::filesystem::remove_all(dir_, ignored);
  }
  std::shared_ptr<const SampleSource> Folder(const std::string& root) {
    auto s = OpenJpegFolder(root);
    EXPECT_TRUE(s.ok()) << (s.ok() ? "" : s.error().message);
    return s.ok() ? std::shared_ptr<const SampleSource>(std::move(*s)) : nullptr;
  }
  static PipelineOptions Options(int workers, std::int64_t batch, bool train) {
    PipelineOptions o;
    o.workers = workers;
    o.batch_size = batch;
    o.out_height = 32;
    o.out_width = 32;
    o.train = train;
    o.seed = 11;
    return o;
  }
  // Pixel (x, y) of sample i of a batch, back in 0..255 RGB.
  static std::array<double, 3> Pixel(const HostBatch& b, std::int64_t i, int x, int y) {
    std::array<double, 3> rgb{};
    for (int c = 0; c < 3; ++c) {
      rgb[c] = (b.images[i][c][y][x].item<float>() * kStd[c] + kMean[c]) * 255.0;
    }
    return rgb;
  }
  std::string dir_;
};

TEST_F(PipelineTest, LabelsAndPixelsArriveAsWritten) {
  DatasetSpec spec;
  spec.classes = 3;
  spec.per_class = 4;
  spec.width = 64;
  spec.height = 48;
  spec.quality = 95;
  ASSERT_TRUE(WriteJpegFolder(dir_ + "/q", spec).ok());
  // Inference transform, file order: sample n is class n / 4, and the 32x32 output keeps the four
  // quadrants in place (the centre crop cuts 11 and 3 pixels off the sides, evenly).
  Pipeline p(Folder(dir_ + "/q"), Options(2, 4, /*train=*/false));
  for (int b = 0; b < 6; ++b) {  // two epochs
    HostBatch& batch = p.Next();
    EXPECT_EQ(batch.index, b);
    for (std::int64_t i = 0; i < 4; ++i) {
      const std::int64_t n = (b * 4 + i) % 12;
      const int label = static_cast<int>(n / 4);
      EXPECT_EQ(batch.labels[i].item<std::int64_t>(), label) << "batch " << b << " row " << i;
      const int at[4][2] = {{8, 8}, {24, 8}, {8, 24}, {24, 24}};
      for (int q = 0; q < 4; ++q) {
        const auto rgb = Pixel(batch, i, at[q][0], at[q][1]);
        const Rgb want = QuadrantColour(label, q);
        for (int c = 0; c < 3; ++c) {
          EXPECT_NEAR(rgb[c], want[c], 8.0)
              << "batch " << b << " row " << i << " quadrant " << q << " ch " << c;
        }
      }
    }
    p.Release(batch);
  }
}

TEST_F(PipelineTest, TrainingAugmentationKeepsEveryPixelOfItsClass) {
  DatasetSpec spec;
  spec.classes = 4;
  spec.per_class = 3;
  spec.quadrants = false;  // one colour per class: any crop, flip or scale of it is that colour
  spec.quality = 95;
  ASSERT_TRUE(WriteJpegFolder(dir_ + "/solid", spec).ok());
  PipelineOptions o = Options(2, 6, /*train=*/true);
  o.shuffle_buffer = 1000;
  Pipeline p(Folder(dir_ + "/solid"), o);
  std::vector<int> seen(4, 0);
  for (int b = 0; b < 4; ++b) {
    HostBatch& batch = p.Next();
    for (std::int64_t i = 0; i < 6; ++i) {
      const auto label = batch.labels[i].item<std::int64_t>();
      ASSERT_GE(label, 0);
      ASSERT_LT(label, 4);
      ++seen[static_cast<std::size_t>(label)];
      const Rgb want = QuadrantColour(static_cast<int>(label), 0);
      for (int y : {0, 15, 31}) {
        for (int x : {0, 15, 31}) {
          const auto rgb = Pixel(batch, i, x, y);
          for (int c = 0; c < 3; ++c)
            ASSERT_NEAR(rgb[c], want[c], 8.0) << b << "/" << i << " at " << x << "," << y;
        }
      }
    }
    p.Release(batch);
  }
  for (int c = 0; c < 4; ++c)
    EXPECT_EQ(seen[static_cast<std::size_t>(c)], 6) << "two epochs: every sample twice";
}

TEST_F(PipelineTest, WorkIsSplitRoundRobinAndContentsDoNotDependOnWorkers) {
  DatasetSpec spec;
  spec.classes = 2;
  spec.per_class = 6;
  spec.texture = 20;
  ASSERT_TRUE(WriteJpegFolder(dir_ + "/t", spec).ok());
  auto source = Folder(dir_ + "/t");
  PipelineOptions o = Options(1, 3, /*train=*/true);
  o.shuffle_buffer = 100;
  std::vector<torch::Tensor> reference;
  {
    Pipeline one(source, o);
    for (int b = 0; b < 6; ++b) {
      HostBatch& batch = one.Next();
      reference.push_back(batch.images.clone());
      EXPECT_EQ(batch.worker, 0);
      one.Release(batch);
    }
  }
  o.workers = 2;
  o.prefetch = 3;
  Pipeline two(source, o);
  for (int b = 0; b < 6; ++b) {
    HostBatch& batch = two.Next();
    EXPECT_EQ(batch.worker, b % 2) << "batch " << b << " is worker " << b % 2 << "'s";
    EXPECT_TRUE(torch::equal(batch.images, reference[static_cast<std::size_t>(b)]))
        << "batch " << b << " differs with two workers: crops must follow the sample's position";
    two.Release(batch);
  }
  const PipelineCounters c = two.Counters();
  ASSERT_EQ(c.workers.size(), 2u);
  for (const WorkerCounters& w : c.workers) {
    EXPECT_GE(w.batches, 3) << "each worker made its three batches";
    EXPECT_GE(w.samples, 9);
    EXPECT_GT(w.cpu_ns, 0);
    EXPECT_GT(w.decode_ns, 0);
  }
}

TEST_F(PipelineTest, HostBatchesTakeTheModelsLayout) {
  DatasetSpec spec;
  ASSERT_TRUE(WriteJpegFolder(dir_ + "/cl", spec).ok());
  PipelineOptions o = Options(1, 2, false);
  const auto strides =
      torch::empty({2, 3, 32, 32}).contiguous(torch::MemoryFormat::ChannelsLast).strides().vec();
  o.image_strides = strides;
  Pipeline p(Folder(dir_ + "/cl"), o);
  HostBatch& b = p.Next();
  EXPECT_EQ(b.images.strides().vec(), strides);
  EXPECT_TRUE(b.images.is_contiguous(torch::MemoryFormat::ChannelsLast));
  p.Release(b);
}

// A JPEG cut in half: libjpeg warns "premature end", which the decoder treats as corrupt.
void Corrupt(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::ofstream(path, std::ios::binary | std::ios::trunc) << bytes.substr(0, bytes.size() / 2);
}

TEST_F(PipelineTest, ACorruptJpegIsAnErrorNamingTheFileOrCountedWhenSkipped) {
  // Large and textured enough that the cut falls in the entropy-coded data, past the headers.
  DatasetSpec spec;
  spec.classes = 2;
  spec.per_class = 3;
  spec.width = 256;
  spec.height = 192;
  spec.texture = 24;
  ASSERT_TRUE(WriteJpegFolder(dir_ + "/c", spec).ok());
  const std::string bad = dir_ + "/c/class_001/img_00001.jpg";
  Corrupt(bad);
  {
    Pipeline p(Folder(dir_ + "/c"), Options(1, 6, false));
    try {
      p.Next();
      FAIL() << "a corrupt JPEG must fail its batch";
    } catch (const DataError& e) {
      EXPECT_NE(std::string(e.what()).find(bad + ": corrupt JPEG"), std::string::npos) << e.what();
    }
  }
  PipelineOptions o = Options(2, 6, false);
  o.skip_corrupt = true;
  Pipeline p(Folder(dir_ + "/c"), o);
  for (int b = 0; b < 3; ++b) {
    HostBatch& batch = p.Next();
    for (std::int64_t i = 0; i < 6; ++i) {
      // Sample 4 (the corrupt one) is replaced by sample 5, the next good one, of the same class.
      EXPECT_EQ(batch.labels[i].item<std::int64_t>(), i < 3 ? 0 : 1);
    }
    p.Release(batch);
  }
  const PipelineCounters c = p.Counters();
  EXPECT_EQ(c.corrupt_inputs, 1);
  // One batch is one epoch, and every epoch meets the corrupt sample once: the three batches
  // taken, plus those the workers made ahead (at most prefetch ready and one filling per worker).
  EXPECT_GE(c.skipped_samples, 3) << "once per epoch";
  EXPECT_LE(c.skipped_samples, 3 + o.prefetch + o.workers) << "once per epoch";
  ASSERT_EQ(c.corrupt_examples.size(), 1u);
  EXPECT_NE(c.corrupt_examples[0].find(bad), std::string::npos);
}

TEST_F(PipelineTest, EveryInputCorruptIsAnErrorEvenWhenSkipping) {
  DatasetSpec spec;
  spec.classes = 1;
  spec.per_class = 2;
  ASSERT_TRUE(WriteJpegFolder(dir_ + "/all", spec).ok());
  Corrupt(dir_ + "/all/class_000/img_00000.jpg");
  Corrupt(dir_ + "/all/class_000/img_00001.jpg");
  PipelineOptions o = Options(1, 2, false);
  o.skip_corrupt = true;
  Pipeline p(Folder(dir_ + "/all"), o);
  EXPECT_THROW(p.Next(), DataError);
}

TEST_F(PipelineTest, TfRecordProblemsNameFileAndOffsetAndLabelsOutsideTheModelAreNotSkipped) {
  DatasetSpec spec;
  spec.classes = 2;
  spec.per_class = 2;
  ASSERT_TRUE(WriteTfRecords(dir_ + "/ok", 1, spec, /*label_offset=*/1).ok());  // labels 1 and 2
  auto source = OpenTfRecords(dir_ + "/ok-*", false);
  ASSERT_TRUE(source.ok());
  PipelineOptions o = Options(1, 4, false);
  o.label_limit = 2;  // a model with two classes: label 2 is out of range
  o.skip_corrupt = true;
  {
    Pipeline p(std::shared_ptr<const SampleSource>(std::move(*source)), o);
    try {
      p.Next();
      FAIL() << "label 2 of a two-class model";
    } catch (const DataError& e) {
      EXPECT_NE(std::string(e.what()).find("record at byte"), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find("label 2 is outside [0, 2)"), std::string::npos) << e.what();
    }
  }
  const std::string good = tfrecord::FrameRecord(tfrecord::EncodeImageExample("not a jpeg", 0));
  std::ofstream(dir_ + "/junk.tfrecord", std::ios::binary) << good;
  auto junk = OpenTfRecords(dir_ + "/junk.tfrecord", false);
  ASSERT_TRUE(junk.ok());
  Pipeline p(std::shared_ptr<const SampleSource>(std::move(*junk)), Options(1, 1, false));
  try {
    p.Next();
    FAIL() << "bytes that are not a JPEG";
  } catch (const DataError& e) {
    EXPECT_NE(std::string(e.what()).find(dir_ + "/junk.tfrecord, record at byte 0: not a JPEG"),
              std::string::npos)
        << e.what();
  }
}

TEST_F(PipelineTest, TheCacheServesLaterEpochs) {
  DatasetSpec spec;
  spec.classes = 2;
  spec.per_class = 4;
  ASSERT_TRUE(WriteJpegFolder(dir_ + "/k", spec).ok());
  PipelineOptions o = Options(1, 4, true);
  o.cache = true;
  o.cache_limit_bytes = std::int64_t{1} << 30;
  o.prefetch = 1;
  Pipeline p(Folder(dir_ + "/k"), o);
  for (int b = 0; b < 6; ++b) p.Release(p.Next());  // three epochs of 8 samples
  const PipelineCounters c = p.Counters();
  EXPECT_EQ(c.cache_entries, 8);
  EXPECT_EQ(c.cache_bytes, 8 * 64 * 48 * 3);
  EXPECT_GE(c.workers[0].cache_hits, 16) << "epochs two and three come from the cache";

  PipelineOptions tiny = o;
  tiny.cache_limit_bytes = 64 * 48 * 3 * 3;  // room for three images
  Pipeline q(Folder(dir_ + "/k"), tiny);
  for (int b = 0; b < 4; ++b) q.Release(q.Next());
  EXPECT_EQ(q.Counters().cache_entries, 3);
  EXPECT_LE(q.Counters().cache_bytes, tiny.cache_limit_bytes);
}

TEST_F(PipelineTest, NoMoreThanPrefetchBatchesWaitAndStoppingNeverHangs) {
  DatasetSpec spec;
  spec.classes = 2;
  spec.per_class = 8;
  ASSERT_TRUE(WriteJpegFolder(dir_ + "/pf", spec).ok());
  PipelineOptions o = Options(2, 2, false);
  o.prefetch = 2;
  Pipeline p(Folder(dir_ + "/pf"), o);
  auto published = [&p] {
    std::int64_t n = 0;
    for (const auto& w : p.Counters().workers) n += w.batches;
    return n;
  };
  // Nothing is consumed: the workers publish batches 0 and 1, then each holds the one it made
  // next and waits for room. Polling has no timing assumption: a broken bound would show as 3+.
  for (int i = 0; i < 2000 && published() < 2; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(5));
  ASSERT_EQ(published(), 2);
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  EXPECT_EQ(published(), 2);
  p.Release(p.Next());
  for (int i = 0; i < 2000 && published() < 3; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(5));
  EXPECT_EQ(published(), 3);
  // The destructor stops workers that are blocked for room.
}

}  // namespace
}  // namespace dlbench::torchrunner::data
