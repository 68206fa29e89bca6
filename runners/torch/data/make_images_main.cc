// dlbench-make-images: writes a generated image data set, an ImageFolder tree of JPEGs or
// TFRecord files of tf.train.Example (data/dataset_writer.h), for input-pipeline cells.
//   dlbench-make-images --out DIR [--format jpeg_dir|tfrecord] [--classes N] [--per-class M]
//                       [--width W] [--height H] [--quality Q] [--texture T] [--files F] [--seed S]
#include <CLI/CLI.hpp>
#include <cstdio>

#include "data/dataset_writer.h"

int main(int argc, char** argv) {
  using dlbench::torchrunner::data::DatasetSpec;
  CLI::App app{"Writes a generated image data set for dlbench's input-pipeline cells"};
  std::string out, format = "jpeg_dir";
  DatasetSpec spec;
  spec.width = 500;
  spec.height = 375;
  spec.texture = 24;
  int files = 8;
  app.add_option("--out", out, "folder (jpeg_dir) or file prefix (tfrecord)")->required();
  app.add_option("--format", format, "jpeg_dir or tfrecord")->check(CLI::IsMember({"jpeg_dir", "tfrecord"}));
  app.add_option("--classes", spec.classes, "classes")->check(CLI::Range(1, 100000));
  app.add_option("--per-class", spec.per_class, "images per class")->check(CLI::Range(1, 10000000));
  app.add_option("--width", spec.width, "pixels")->check(CLI::Range(1, 16384));
  app.add_option("--height", spec.height, "pixels")->check(CLI::Range(1, 16384));
  app.add_option("--quality", spec.quality, "JPEG quality")->check(CLI::Range(1, 100));
  app.add_option("--texture", spec.texture, "noise amplitude added to the colours (0: flat colours)")
      ->check(CLI::Range(0, 127));
  app.add_option("--files", files, "TFRecord files")->check(CLI::Range(1, 100000));
  app.add_option("--seed", spec.seed, "seed of the noise");
  CLI11_PARSE(app, argc, argv);
  const dlbench::Status s =
      format == "jpeg_dir" ? WriteJpegFolder(out, spec) : WriteTfRecords(out, files, spec);
  if (!s.ok()) {
    std::fprintf(stderr, "dlbench-make-images: %s\n", s.error().message.c_str());
    return 1;
  }
  std::printf("dlbench-make-images: %d x %d %dx%d images (quality %d) in %s\n", spec.classes, spec.per_class,
              spec.width, spec.height, spec.quality, out.c_str());
  return 0;
}
