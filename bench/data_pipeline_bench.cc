// What the input pipeline delivers on this machine, on 96 generated 500x375 JPEGs at quality 90
// with texture (about the size and decode cost of ImageNet photos; dlbench-make-images' default):
//  - BM_Decode/<denominator>: one libjpeg-turbo decode at scale 1/1 and 1/2 (items: images).
//  - BM_Pipeline/<workers>: batches of 32 training samples (RandomResizedCrop 224, flip,
//    normalise) from the Pipeline, Next + Release per iteration, real time (the work is in the
//    workers' threads); items: samples. More workers than cores cannot help.
#include <benchmark/benchmark.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>

#include "data/dataset_writer.h"
#include "data/jpeg.h"
#include "data/pipeline.h"

namespace {

using namespace dlbench::torchrunner::data;

const std::string& DataDir() {
  static const std::string dir = [] {
    char tmpl[] = "/tmp/dlbench_bench_data_XXXXXX";
    if (mkdtemp(tmpl) == nullptr) std::abort();
    DatasetSpec spec;
    spec.classes = 4;
    spec.per_class = 24;
    spec.width = 500;
    spec.height = 375;
    spec.quality = 90;
    spec.texture = 24;
    if (!WriteJpegFolder(std::string(tmpl) + "/images", spec).ok()) std::abort();
    return std::string(tmpl);
  }();
  return dir;
}

void BM_Decode(benchmark::State& state) {
  std::ifstream in(DataDir() + "/images/class_000/img_00000.jpg", std::ios::binary);
  const std::string jpeg((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  JpegDecoder decoder;
  RgbImage out;
  const Scale scale{1, static_cast<int>(state.range(0))};
  for (auto _ : state) {
    if (!decoder.Decode(jpeg, scale, out).ok()) state.SkipWithError("decode failed");
    benchmark::DoNotOptimize(out.pixels.data());
  }
  state.SetItemsProcessed(state.iterations());
  state.SetLabel(std::to_string(jpeg.size() / 1024) + " KiB JPEG");
}
BENCHMARK(BM_Decode)->Arg(1)->Arg(2);

void BM_Pipeline(benchmark::State& state) {
  auto source = OpenJpegFolder(DataDir() + "/images");
  if (!source.ok()) {
    state.SkipWithError(source.error().message.c_str());
    return;
  }
  PipelineOptions o;
  o.workers = static_cast<int>(state.range(0));
  o.prefetch = 2;
  o.batch_size = 32;
  o.out_height = 224;
  o.out_width = 224;
  o.train = true;
  o.shuffle_buffer = 10000;
  o.seed = 1;
  Pipeline pipeline(std::shared_ptr<const SampleSource>(std::move(*source)), o);
  for (int i = 0; i < 2 * o.workers; ++i) pipeline.Release(pipeline.Next());  // the prefetched start
  for (auto _ : state) pipeline.Release(pipeline.Next());
  state.SetItemsProcessed(state.iterations() * o.batch_size);
}
BENCHMARK(BM_Pipeline)->Arg(1)->Arg(2)->Arg(4)->UseRealTime()->Unit(benchmark::kMillisecond)->MinTime(3.0);

}  // namespace

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  std::error_code ignored;
  std::filesystem::remove_all(DataDir(), ignored);
  return 0;
}
