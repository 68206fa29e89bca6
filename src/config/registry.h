// The parameter registry: the one list of every key a matrix file may hold (STYLE.md rule 5).
//
// Each entry names a key, its type, unit, default, allowed values or range, the runner scope it
// belongs to and its help text. Parsing (matrix.cc), validation, default filling (plan.cc), the
// terminal help (RenderParamHelp), the Markdown reference (RenderConfigReference, checked in as
// docs/config-reference.md) and cell labels all read this list; nothing else spells a key.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/error.h"
#include "config/matrix.h"

namespace dlbench::config {

enum class ParamType {
  kString,
  kInt,          // a signed 64-bit integer
  kNumber,       // a double; integers are accepted and stored as doubles
  kBool,         // true or false
  kEnum,         // a string from ParamSpec::allowed
  kMapping,      // top-level only: matrix, measure
  kMappingList,  // top-level only: exclude, include
  kRunner,       // top-level only: null | torch | {command: [argv...]}
};

// Where a key may be written.
enum class ParamSection {
  kTopLevel,  // a key of the file's root mapping
  kCell,      // a cell parameter: a key under matrix:, or of an include/exclude entry
  kMeasure,   // a key under measure: (one field of MeasureSettings)
};

// Which runner understands a cell parameter. Top-level and measure keys are kCore.
enum class Scope {
  kCore,   // every runner
  kNull,   // only with runner: null
  kTorch,  // only with runner: torch
  kLoad,   // inference under load: the runners that serve queries (null, torch, and command runners)
  // The input's size (seq_len, image_size): the torch runner's models read it, and so does
  // dlbench-null's memory model, so that `seq_len: max` and `image_size: max` are tested exactly.
  kInputSize,
};

// The shape a kString value must have; checked by ParseParamText/ValidateParamValue.
enum class StringFormat {
  kAny,
  kDevice,         // cpu | cuda | cuda:N
  kShapes,         // input shapes: "B,3,224,224;B,16" (dims are positive integers or B, the batch size)
  kDtypes,         // input dtypes: "float32;int64" (torch dtype names)
  kBytes,          // an amount of memory: "16GiB", "512MiB", "1073741824"; 1 byte to kMaxByteSize
  kCudaAllocConf,  // PYTORCH_CUDA_ALLOC_CONF's documented grammar (config/cuda_alloc_conf.h)
  // precision names: "fp32;bf16;int8" (the precision key's values, each at most once)
  kPrecisions,
  // per-precision tolerances: "bf16=0.99;int8=0.9" (precision names each at most once, each with a
  // number between 0 and 1)
  kPrecisionTolerances,
  // per-precision bounds on an absolute difference: "bf16=0.05;int8=0.5" (precision names each at
  // most once, each with a number between 0 and kMaxDiffTolerance)
  kPrecisionDiffTolerances,
};

// What a cell parameter says about how long its cell takes, for plan's estimate without history.
// A runner's knob that shapes its time declares it here, so plan reads the registry, not the
// runner's parameter names.
enum class EstimateHint {
  kNone,
  kStepMs,        // milliseconds per step (kNumber)
  kSetupMs,       // milliseconds before READY (kNumber)
  kWarmupSteps,   // the first this many steps are slower (kInt) ...
  kWarmupFactor,  // ... by this factor (kNumber)
};

// One end of a numeric range.
struct Bound {
  double value = 0.0;
  bool inclusive = true;
};

struct ParamSpec {
  std::string name;
  ParamSection section = ParamSection::kCell;
  Scope scope = Scope::kCore;
  ParamType type = ParamType::kString;
  std::string unit;                    // "ms", "s", "bytes", "%", ... or empty
  std::optional<Value> default_value;  // typed like the parameter; absent: no default
  // The default when it is not a constant ("= batch_size", "the library's"); empty otherwise.
  std::string default_text;
  // A cell parameter whose value is this one's default when this one is absent (samples_per_step
  // takes batch_size's); empty for none.
  std::string default_from;
  std::vector<std::string> allowed;          // kEnum: the allowed values, in documented order
  std::vector<std::string> keywords;         // kInt/kNumber: words taken as themselves (target_qps: max)
  std::optional<Bound> min;                  // kInt/kNumber
  std::optional<Bound> max;                  // kInt/kNumber
  StringFormat format = StringFormat::kAny;  // kString only
  // A runner ("torch") with which every cell must set this parameter; empty: never required.
  std::string required_with;
  // In cell labels: "bs" renders "bs=32"; "" renders the name ("step_ms=2.0"); "=" renders the
  // value alone ("resnet50", "fp16").
  std::string label;
  std::string help;
  EstimateHint estimate = EstimateHint::kNone;
};

// Limits of the string formats, part of what ValidateParamValue checks.
inline constexpr int kMaxCudaIndex = 1023;                           // cuda:N with 0 <= N <= this
inline constexpr std::int64_t kMaxShapeDim = 999'999'999;            // an input shape's dimension
inline constexpr std::int64_t kMaxByteSize = std::int64_t{1} << 40;  // kBytes: at most 1 TiB
// The boundary search's defaults (batch_size, seq_len or image_size: max; boundary_max_probes,
// boundary_probe_steps, boundary_min; docs/memory.md).
inline constexpr std::int64_t kDefaultBoundaryMaxProbes = 24;
inline constexpr std::int64_t kDefaultBoundaryProbeSteps = 5;
// image_size: max starts at 32, the smallest input the zoo's CNNs take (their total stride).
inline constexpr std::int64_t kDefaultBoundaryMinImageSize = 32;
// The keys a boundary search can search, in the order a cell's first `max` among them is taken.
inline constexpr const char* kBoundarySearchKeys[] = {"batch_size", "seq_len", "image_size"};

// The dtype names kDtypes accepts, in documented order (torch's names).
const std::vector<std::string>& KnownDtypes();

// The parsed forms of the string formats, for runners that use the values. Each returns nullopt
// exactly when ValidateParamValue rejects the text for a parameter of that format.
struct DeviceName {
  bool cuda = false;
  int index = 0;  // CUDA ordinal; 0 for "cuda" and for "cpu"
};
std::optional<DeviceName> ParseDeviceName(std::string_view text);
// Shapes separated by ';', dimensions by ','; spaces around either are allowed. A dimension is
// 1..kMaxShapeDim or "B" (the batch size), returned as kBatchDim.
inline constexpr std::int64_t kBatchDim = -1;
std::optional<std::vector<std::vector<std::int64_t>>> ParseShapes(std::string_view text);
// An integer, optionally followed (spaces allowed between) by a unit: B, KiB, MiB, GiB, TiB
// (powers of 1024) or KB, MB, GB, TB (powers of 1000); the bytes, when 1..kMaxByteSize.
std::optional<std::int64_t> ParseByteSize(std::string_view text);
// Names from KnownDtypes separated by ';' (spaces around them allowed), in order.
std::optional<std::vector<std::string>> ParseDtypes(std::string_view text);
// Values of the `precision` key separated by ';' (spaces around them allowed), each at most once,
// in order.
std::optional<std::vector<std::string>> ParsePrecisionList(std::string_view text);
// `precision=number` pairs separated by ';' (spaces around each part allowed): each precision a
// value of the `precision` key at most once, each number between 0 and 1; in order.
std::optional<std::vector<std::pair<std::string, double>>> ParsePrecisionTolerances(std::string_view text);
// The same pairs with each number between 0 and kMaxDiffTolerance (max_abs_diff, max_mean_abs_diff:
// bounds on the outputs' absolute differences, docs/precisions.md).
inline constexpr double kMaxDiffTolerance = 1e6;
std::optional<std::vector<std::pair<std::string, double>>> ParsePrecisionDiffTolerances(
    std::string_view text);

// Every entry, in documented order (top-level keys, measure keys, then cell parameters by scope).
const std::vector<ParamSpec>& Registry();

// The entry for `name` in `section`, or nullptr.
const ParamSpec* FindParam(std::string_view name, ParamSection section);

// Whether a cell parameter of `scope` is valid with the named runner ("null", "torch",
// "command"). A command runner accepts core parameters; any other key it receives unvalidated.
bool ScopeValidForRunner(Scope scope, const std::string& runner_name);

// The cell parameters valid with the named runner, in registry order.
std::vector<const ParamSpec*> CellParamsForRunner(const std::string& runner_name);

const char* ParamTypeName(ParamType type);
const char* ScopeName(Scope scope);

// What a valid value looks like, for messages and docs: "an integer >= 1",
// "one of train, infer", "a number > 0 and < 1", "cpu, cuda or cuda:N".
std::string DescribeExpected(const ParamSpec& spec);

// Converts the text of a scalar (as written in YAML or on a command line) to the parameter's
// type and validates it. The error message reads "expected <DescribeExpected> (got '<text>')".
Result<Value> ParseParamText(const ParamSpec& spec, const std::string& text);

// Validates an already-typed value against type, range, allowed values and format. The message
// is phrased like ParseParamText's.
Status ValidateParamValue(const ParamSpec& spec, const Value& value);

// Canonical text of a value, used in cell keys and labels: strings as written (JSON-quoted when
// they hold ',', '=', '"', a leading/trailing space, or would read as a number, bool or null),
// integers in decimal, numbers in shortest round-trip form with a ".0" when integral
// (nlohmann::json's dump), bools as true/false.
std::string FormatValue(const Value& value);

// The candidate closest to `key` by edit distance (Damerau-Levenshtein, optimal string
// alignment), when close enough to be a likely typo: distance <= 2 and less than half of the
// key's length. nullopt otherwise.
std::optional<std::string> NearestKey(std::string_view key, const std::vector<std::string>& candidates);

// Compact table of every key for `--help` (plain text, about 100 columns).
std::string RenderParamHelp();
// One key in full for `dlbench params KEY`: where it may be written, type, unit, default, allowed
// values (dtype names included), the runner that requires it, and the whole help text wrapped to
// 100 columns.
std::string RenderParamEntry(const ParamSpec& spec);

// A runner's own documentation keeps a parameter table whose first columns come from the
// registry: "| `name` | type | unit | default | allowed |", as the config reference renders them,
// then the runner's notes. RenderParamRowPrefix is that start of one row (up to and including the
// fifth '|'); CheckRunnerDocTable compares the table that follows the line
// "<!-- registry-table: RUNNER -->" in `markdown` with the registry (one row per cell parameter
// of the runner, in registry order) and returns the differences, one per line; empty: they agree.
std::string RenderParamRowPrefix(const ParamSpec& spec);
std::string CheckRunnerDocTable(const std::string& markdown, const std::string& runner);

// The Markdown reference of the matrix file format; docs/config-reference.md is its output
// (regenerate with `build/bin/dlbench-config-reference > docs/config-reference.md`).
std::string RenderConfigReference();

}  // namespace dlbench::config
