// The torch runner's models as the plan sees them (docs/models.md): which names exist and which
// size keys each one reads, so that a matrix naming an unknown model, or a TorchScript cell without
// its file, is refused at plan time (file:line:col) rather than per cell, and a size key the
// cell's model ignores (image_size on bert_base) is left out of the cell instead of splitting its
// identity from its twin's in compare and trend. TorchE2E.ThePlansModelTableIsTheRunners keeps
// the table equal to `dlbench-torch --models`.
#pragma once

#include <string>
#include <vector>

#include "common/error.h"
#include "config/load_rules.h"
#include "config/matrix.h"

namespace dlbench::config {

struct TorchModelInfo {
  std::string name;
  std::vector<std::string> size_keys;  // sorted; the registry's model-size keys this model reads
  // Whether scenario: converge can train it: it takes Fashion-MNIST's 1 x 28 x 28 images and
  // classifies them into 10 classes (runners/torch/converge.cc checks the same at cell time).
  bool converges = false;
};

// The zoo (runners/torch/models/zoo.h), in `dlbench models` order.
const std::vector<TorchModelInfo>& TorchModelTable();

// The registry's model-size keys (image_size, width_mult, base_width, num_classes, layers,
// hidden_size, heads, seq_len, vocab_size), sorted.
const std::vector<std::string>& ModelSizeKeys();

// One cell's model errors (parameters as written, before defaults): `model` neither in the table
// nor `torchscript` nor `aoti`; `torchscript` or `aoti` without model_path or input_shapes; a
// model_path that is not a readable regular file (relative paths are taken from the working
// directory, as the runner does); scenario: converge with a model that does not converge
// (TorchScript and AOTInductor included), or with a
// num_classes other than Fashion-MNIST's 10.
std::vector<LoadRuleViolation> CheckTorchModelCell(const Combination& cell);

// CheckTorchModelCell over a matrix's cells, reported as CheckLoadRules reports.
Status CheckTorchModelRules(const Matrix& matrix, const std::vector<Combination>& cells);

// Why `precision: int8` will end this cell `unsupported` (docs/precisions.md), or empty: the torch
// runner's int8 is dynamic int8 Linear layers for bert_base, or a TorchScript model quantized
// offline, for inference on the CPU; never an AOTInductor package, which runs at the precision it
// was compiled at (runners/torch/cell_options.cc refuses the rest the same way at cell time;
// whether a TorchScript file holds quantized layers is known only when the runner loads it).
// Reads the cell after defaults (device, scenario).
std::string Int8Problem(const Combination& cell);

// Removes from `cell` the size keys its model does not read and returns them (empty when none,
// or when the model is unknown). A TorchScript model or AOTInductor package reads none: its shapes
// are input_shapes.
std::vector<std::string> DropUnusedSizeKeys(Combination& cell);

}  // namespace dlbench::config
