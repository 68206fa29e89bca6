// The parameter registry as text (registry.h): the terminal help of `dlbench params`, the Markdown
// tables and the prose of docs/config-reference.md (RenderConfigReference), and the check that a
// runner's doc page holds its registry table.
#include <algorithm>
#include <cstddef>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "common/text.h"
#include "config/registry.h"
#include "config/registry_text.h"

namespace dlbench::config {

using internal::FormatText;
using internal::RangeText;

namespace {

// The "allowed" column of help and docs: range, enum values or format; "any" otherwise. `brief`
// (the terminal) leaves out the list of dtype names.
std::string AllowedText(const ParamSpec& spec, bool brief) {
  switch (spec.type) {
    case ParamType::kEnum:
      return Join(spec.allowed, ", ");
    case ParamType::kInt:
    case ParamType::kNumber: {
      std::string range = RangeText(spec);
      return (range.empty() ? "any" : range) +
             (spec.keywords.empty() ? "" : ", or " + Join(spec.keywords, ", "));
    }
    case ParamType::kBool:
      return "true, false";
    case ParamType::kString: {
      if (brief && spec.format == StringFormat::kDtypes) return "dtypes like float32;int64";
      std::string format = FormatText(spec.format);
      return format.empty() ? "any" : format;
    }
    case ParamType::kRunner:
      return "null, torch, {command: [argv...]}";
    case ParamType::kMapping:
    case ParamType::kMappingList:
      return "";
  }
  return "";
}

// Defaults as a reader writes them in YAML: strings unquoted (FormatValue quotes "null").
std::string DefaultText(const ParamSpec& spec) {
  if (spec.default_value) {
    return spec.default_value->is_string() ? spec.default_value->get<std::string>()
                                           : FormatValue(*spec.default_value);
  }
  if (!spec.default_text.empty()) return spec.default_text;
  return "none";
}

}  // namespace

std::string RenderParamEntry(const ParamSpec& spec) {
  std::string where;
  switch (spec.section) {
    case ParamSection::kTopLevel:
      where = "a top-level key";
      break;
    case ParamSection::kMeasure:
      where = "a key under measure:";
      break;
    case ParamSection::kCell:
      where = std::string("a cell parameter (matrix:, include:, exclude:); runners: ") +
              (spec.scope == Scope::kCore ? "every runner" : ScopeName(spec.scope));
      break;
  }
  std::string type = ParamTypeName(spec.type);
  if (!spec.unit.empty()) type += " (" + spec.unit + ")";
  std::string out = spec.name + ": " + where + "\n";
  out += "  type:     " + type + "\n";
  out += "  default:  " + DefaultText(spec) +
         (spec.default_from.empty() ? "" : " (= " + spec.default_from + ")") + "\n";
  const std::string allowed = AllowedText(spec, /*brief=*/false);
  if (!allowed.empty()) out += "  allowed:  " + allowed + "\n";
  if (!spec.required_with.empty()) out += "  required: with runner: " + spec.required_with + "\n";
  // The help, wrapped at word boundaries to 100 columns under a two-space indent.
  constexpr std::size_t kWidth = 100;
  std::string line = " ";
  out += "\n";
  std::size_t at = 0;
  while (at < spec.help.size()) {
    std::size_t space = spec.help.find(' ', at);
    if (space == std::string::npos) space = spec.help.size();
    const std::string word = spec.help.substr(at, space - at);
    if (line.size() + 1 + word.size() > kWidth && line.size() > 1) {
      out += line + "\n";
      line = " ";
    }
    line += " " + word;
    at = space + 1;
  }
  if (line.size() > 1) out += line + "\n";
  return out;
}

std::string RenderParamHelp() {
  struct Row {
    std::string name, type, def, allowed, help;
  };
  auto type_text = [](const ParamSpec& spec) {
    std::string t = ParamTypeName(spec.type);
    if (!spec.unit.empty()) t += " (" + spec.unit + ")";
    return t;
  };
  auto first_sentence = [](const std::string& help) {
    auto dot = help.find(". ");
    return dot == std::string::npos ? help : help.substr(0, dot + 1);
  };
  // Columns are as wide as their longest entry up to a cap; a longer entry pushes its row out
  // rather than widening every row, and the meaning is cut to keep lines within kLineWidth.
  constexpr std::size_t kLineWidth = 120;
  auto render = [&](const std::string& title, const std::vector<const ParamSpec*>& specs) {
    std::vector<Row> rows;
    rows.push_back({"key", "type", "default", "allowed", "meaning"});
    for (const ParamSpec* spec : specs) {
      rows.push_back({spec->name, type_text(*spec), DefaultText(*spec), AllowedText(*spec, /*brief=*/true),
                      first_sentence(spec->help)});
    }
    std::size_t w[4] = {0, 0, 0, 0};
    for (const Row& row : rows) {
      w[0] = std::max(w[0], row.name.size());
      w[1] = std::max(w[1], row.type.size());
      if (row.def.size() <= 16) w[2] = std::max(w[2], row.def.size());
      if (row.allowed.size() <= 30) w[3] = std::max(w[3], row.allowed.size());
    }
    auto pad = [](const std::string& s, std::size_t width) {
      return s.size() >= width ? s : s + std::string(width - s.size(), ' ');
    };
    std::string out = title + "\n";
    for (const Row& row : rows) {
      std::string line = "  " + pad(row.name, w[0]) + "  " + pad(row.type, w[1]) + "  " + pad(row.def, w[2]) +
                         "  " + pad(row.allowed, w[3]) + "  ";
      std::string help = row.help;
      if (line.size() + help.size() > kLineWidth) {
        std::size_t room = kLineWidth > line.size() + 3 ? kLineWidth - line.size() - 3 : 0;
        help = help.substr(0, room) + "...";
      }
      line += help;
      while (!line.empty() && line.back() == ' ') line.pop_back();
      out += line + "\n";
    }
    return out;
  };
  auto select = [](ParamSection section, std::optional<Scope> scope) {
    std::vector<const ParamSpec*> out;
    for (const ParamSpec& spec : Registry()) {
      if (spec.section == section && (!scope || spec.scope == *scope)) out.push_back(&spec);
    }
    return out;
  };
  std::string out;
  out += render("Top-level keys:", select(ParamSection::kTopLevel, std::nullopt));
  out += "\n" + render("measure: keys:", select(ParamSection::kMeasure, std::nullopt));
  out += "\n" + render("Cell parameters, every runner (matrix axes; a scalar is one value):",
                       select(ParamSection::kCell, Scope::kCore));
  out += "\n" + render("Cell parameters, runner: null:", select(ParamSection::kCell, Scope::kNull));
  out += "\n" + render("Cell parameters, runner: torch:", select(ParamSection::kCell, Scope::kTorch));
  out += "\n" + render("Cell parameters, input sizes (runner: null or torch):",
                       select(ParamSection::kCell, Scope::kInputSize));
  out += "\n" + render("Cell parameters, inference under load (runner: null, torch or command):",
                       select(ParamSection::kCell, Scope::kLoad));
  out +=
      "\nA runner {command: [argv...]} takes the core parameters and the load keys, and passes any other key "
      "through unvalidated.\nFull reference: docs/config-reference.md\n";
  return out;
}

namespace {

std::string MarkdownTable(ParamSection section, std::optional<Scope> scope) {
  std::ostringstream out;
  out << "| Key | Type | Unit | Default | Allowed | Description |\n";
  out << "|---|---|---|---|---|---|\n";
  for (const ParamSpec& spec : Registry()) {
    if (spec.section != section || (scope && spec.scope != *scope)) continue;
    std::string help = spec.help;
    if (!spec.required_with.empty()) help += " Required with runner " + spec.required_with + ".";
    out << RenderParamRowPrefix(spec) << " " << EscapeMarkdownCell(help) << " |\n";
  }
  return out.str();
}

// The cells of a Markdown table row, trimmed; a '|' escaped as "\|" stays inside its cell.
std::vector<std::string> TableCells(const std::string& line) {
  std::vector<std::string> cells;
  std::string cell;
  for (std::size_t i = 0; i < line.size(); ++i) {
    if (line[i] == '\\' && i + 1 < line.size() && line[i + 1] == '|') {
      cell += "\\|";
      ++i;
    } else if (line[i] == '|') {
      cells.push_back(Trim(cell));
      cell.clear();
    } else {
      cell += line[i];
    }
  }
  cells.push_back(Trim(cell));
  // The text before the first '|' and after the last one is not a cell.
  if (!cells.empty()) cells.erase(cells.begin());
  if (!cells.empty()) cells.pop_back();
  return cells;
}

// The prose of the reference. It lives here, beside the tables it introduces, so the whole file
// is generated and a stale copy fails config_test.
constexpr const char* kReferenceIntro = R"md(# Matrix file reference

<!-- Generated from src/config/registry_entries_*.cc and registry_render.cc: do not edit by hand. Regenerate with
     build/bin/dlbench-config-reference > docs/config-reference.md -->

A matrix file is YAML that declares what `dlbench run` measures: which runner, which parameter
combinations (cells), how often and in which order, and the measurement policy. It is validated
completely before anything runs; every problem is reported, one per line, as

```
FILE:LINE:COL: error: KEY: what was expected (got X)
```

where KEY is the key's path (`batch_size`, `measure.min_steps`, `include[0].batch_size`), for
example `m.yaml:4:15: error: batch_size: expected an integer >= 1 (got '-4')` or
`m.yaml:3:3: error: unknown key 'batchsize' (did you mean 'batch_size'?)`. Unknown keys, duplicate
keys, wrong types, values outside the allowed set, an empty matrix, an axis with an empty list or
a repeated value, exclude entries naming something that is not an axis value, and YAML syntax
errors are all errors. `dlbench params` prints the same tables in compact form.

```yaml
name: resnet-batch-sweep
runner: torch
matrix:
  model: [resnet50, mobilenet_v2]
  batch_size: [1, 8, 32]
  precision: [fp32, bf16]
  device: cuda            # a scalar is an axis with one value
exclude:
  - model: mobilenet_v2
    precision: bf16
include:
  - model: resnet50       # 64 is not a batch_size of the axis, so this entry extends no
    batch_size: 64        # combination and becomes a cell of its own: it names every
    precision: bf16       # parameter that should differ from the defaults
    device: cuda
repetitions: 3
seed: 42
ordering: interleaved
measure:
  max_time_s: 30
  target_rel_ci: 0.01
```

## Top-level keys

)md";

constexpr const char* kReferenceMeasure = R"md(
## `measure:` keys

The measurement policy's settings (`MeasureSettings`). `min_steps <= max_steps` and
`min_time_s <= max_time_s` are checked.

)md";

constexpr const char* kReferenceCells = R"md(
## Cell parameters

A cell parameter may be a matrix axis (a list of values), a scalar (an axis with one value), or
a key of an include entry. Which parameters are valid depends on the runner: core parameters
always, null-runner parameters only with `runner: null`, torch-runner parameters only with
`runner: torch`, inference-under-load keys with `runner: null`, `runner: torch` and command
runners. A `runner: {command: [argv...]}` accepts the core and load parameters (validated) and
passes any other key to the program unvalidated, since dlbench cannot know its parameters.
Numbers accept integers (`step_ms: 2` is 2.0); integers do not accept fractions.
The inference-under-load keys (`load` to `input_residency`) apply only to cells with `load`, some
only to one scenario; every cell of the expanded matrix is checked and a key that does not apply
is an error at the key ([load.md](load.md), "Parameters"). Likewise the convergence keys
(`target_accuracy` to `eval_samples`) apply only with `scenario: converge`, which needs exactly one
of `target_accuracy` and `target_loss` and takes no `data` ([convergence.md](convergence.md)).

### Every runner (core)

)md";

constexpr const char* kReferenceNull = R"md(
### Null runner (`runner: null`)

The null runner does no work: it busy-waits `step_ms` per step, so dlbench's own overhead can be
measured and every failure path tested without a GPU. With `virtual_time: true` it busy-waits
nothing: it reports the drawn step times on a virtual clock that starts at READY, so step times
are exact and a long cell is simulated in milliseconds (the monitor analysis of such a cell is
skipped, with a note). The step time is `step_ms` times independent factors: the jitter
(`jitter_pct`, `jitter_dist`), a warm-up transient (`warmup_steps`, `warmup_factor`), a second mode
(`bimodal_fraction`, `bimodal_factor`), a linear drift (`drift_pct_per_s`) and a level shift
(`shift_at_step`, `shift_factor`); `runners/null/synthetic_steps.h` has the formula.
`inject` provokes one failure each, the rows of docs/protocol.md's fault table.

)md";

constexpr const char* kReferenceTorch = R"md(
### Torch runner (`runner: torch`)

Size parameters are optional: absent means the model's standard size, and the runner records the
effective value with the cell's results.

)md";

constexpr const char* kReferenceInputSize = R"md(
### Input sizes (`runner: null` or `runner: torch`)

The torch runner's models read these as their input's size; dlbench-null's memory model reads them
too (`memory_per_token_bytes`, `memory_per_pixel_bytes`), so that the boundary search over them
(`seq_len: max`, `image_size: max`; [memory.md](memory.md)) is tested with an exact answer.

)md";

constexpr const char* kReferenceLoad = R"md(
### Inference under load (`runner: null`, `runner: torch` or a command runner)

A cell with `load` measures queries instead of steps ([load.md](load.md)): dlbench-torch serves
them with the model, dlbench-null on its virtual clock with the service time of `service_us` and
`service_per_sample_us`, a command runner through the Python client's load driver
([python-client.md](python-client.md)) or its own. These keys are validated for a command runner
as for the built-in ones. The rules across these keys (which scenario each applies to) are checked
per cell.

)md";

constexpr const char* kReferenceOutro = R"md(
## How a matrix becomes cells

1. **Cartesian product** of the axes in file order, the last axis varying fastest:
   `a: [1, 2]`, `b: [x, y]` gives `{a: 1, b: x}`, `{a: 1, b: y}`, `{a: 2, b: x}`, `{a: 2, b: y}`.
2. **exclude**: a combination that matches every key of an exclude entry is dropped. Entries may
   name only axes, and only values those axes hold (anything else is a typo and an error).
3. **include**, with GitHub Actions' `strategy.matrix.include` semantics, applied after exclude,
   entry by entry in file order:
   - An entry's key/value pairs are added to every combination of the product that they can
     extend without overwriting an *original* (axis) value: every key of the entry that is an
     axis must equal the combination's value for that axis. Keys that are not axes are added, and
     a value added by an earlier include entry can be overwritten by a later one.
   - An entry that extends none of the product's combinations becomes a new combination by
     itself (with only its own keys; defaults fill the rest). New combinations are not extended
     by later entries.

   GitHub's own example: with `fruit: [apple, pear]`, `animal: [cat, dog]` and the include
   entries `{color: green}`, `{color: pink, animal: cat}`, `{fruit: apple, shape: circle}`,
   `{fruit: banana}`, `{fruit: banana, animal: cat}`, the cells are
   `{fruit: apple, animal: cat, color: pink, shape: circle}`,
   `{fruit: apple, animal: dog, color: green, shape: circle}`,
   `{fruit: pear, animal: cat, color: pink}`, `{fruit: pear, animal: dog, color: green}`,
   `{fruit: banana}` and `{fruit: banana, animal: cat}`.
4. **Defaults** from the tables above are filled in for every parameter of the runner's scope that
   has one and is not set (`samples_per_step` takes the cell's `batch_size`). Parameters without a
   default stay absent; the runner reports what it used. A cell that lacks a required parameter
   (`model` with `runner: torch`) is an error. Two combinations that end up with identical
   parameters are one cell (the first in plan order); use `repetitions` to run a cell again.
5. **Identity.** A cell's `key` is its parameters, defaults included, as `name=value` pairs sorted
   by name and joined by `,` (strings holding `,`, `=` or `"`, or that would read as a number or
   bool, are JSON-quoted). The key identifies the same cell across runs and machines. Its `id` in a
   run is `key#rN` for repetition N (0-based). Its `label` is short text for tables, in registry
   order: the model, every axis with several values, and any other parameter that varies across
   the plan where the cell's value is not the default (`resnet50 infer bs=32 bf16`,
   `inject=exit exit_code=7`). A plan of one cell is labelled by its non-default parameters.
6. **Repetitions**: every cell runs `repetitions` times, each in a fresh process.

## Seeds

Each cell and repetition gets its own seed, the same on every platform and run:

```
h    = FNV-1a-64(key)                      (offset 14695981039346656037, prime 1099511628211)
seed = SplitMix64(SplitMix64(matrix_seed XOR h) XOR repetition) AND (2^63 - 1)
```

where `SplitMix64(x)` is the SplitMix64 finaliser of `x + 0x9E3779B97F4A7C15` (multipliers
`0xBF58476D1CE4E5B9`, `0x94D049BB133111EB`, shifts 30, 27, 31). The top bit is cleared so the
seed fits a signed 64-bit database column. Changing the matrix seed changes every cell's seed;
adding a cell to the matrix changes no other cell's seed.

## Ordering

- `grouped` (default): plan order; the repetitions of a cell run back to back.
- `interleaved`: repetitions run in rounds (round r holds repetition r of every cell), and each
  round is shuffled with a Fisher-Yates shuffle driven by one SplitMix64 stream seeded with
  `order_seed` for the whole run: for i from n down to 2, swap positions i-1 and j, where j is the
  next draw modulo i after rejecting draws below 2^64 mod i (no platform RNG). Slow drift of the machine
  (heat, background load) then spreads over all cells instead of biasing the ones that ran last.
  The same `order_seed` gives the same order everywhere; a different one gives another order.
)md";

}  // namespace

std::string RenderParamRowPrefix(const ParamSpec& spec) {
  const std::string def = spec.default_value ? "`" + DefaultText(spec) + "`" : DefaultText(spec);
  return "| `" + spec.name + "` | " + ParamTypeName(spec.type) + " | " + spec.unit + " | " +
         EscapeMarkdownCell(def) + " | " + EscapeMarkdownCell(AllowedText(spec, /*brief=*/false)) + " |";
}

std::string CheckRunnerDocTable(const std::string& markdown, const std::string& runner) {
  const std::string marker = "<!-- registry-table: " + runner + " -->";
  std::istringstream in(markdown);
  std::string line;
  bool found = false;
  while (std::getline(in, line)) {
    if (Trim(line) == marker) {
      found = true;
      break;
    }
  }
  if (!found) return "no line '" + marker + "'\n";
  std::vector<std::string> rows;
  while (std::getline(in, line)) {
    if (Trim(line).empty() && rows.empty()) continue;
    if (!StartsWith(Trim(line), "|")) break;
    rows.push_back(line);
  }
  // rows[0] is the header, rows[1] the |---| line.
  const std::vector<const ParamSpec*> specs = CellParamsForRunner(runner);
  std::string problems;
  if (rows.size() < 2) return "no table after '" + marker + "'\n";
  const std::vector<std::string> header = TableCells(rows[0]);
  const std::vector<std::string> want_header = {"parameter", "type", "unit", "default", "allowed"};
  if (header.size() <= want_header.size() ||
      !std::equal(want_header.begin(), want_header.end(), header.begin())) {
    problems += "header: want '| " + Join(want_header, " | ") + " | <notes...> |', have '" + rows[0] + "'\n";
  }
  const std::size_t have = rows.size() - 2;
  for (std::size_t i = 0; i < std::max(have, specs.size()); ++i) {
    if (i >= specs.size()) {
      problems += "row " + std::to_string(i + 1) + ": not a parameter of runner " + runner + ": '" +
                  rows[i + 2] + "'\n";
      continue;
    }
    const std::string want = RenderParamRowPrefix(*specs[i]);
    if (i >= have) {
      problems += "row " + std::to_string(i + 1) + ": missing, want '" + want + " <notes> |'\n";
      continue;
    }
    const std::vector<std::string> want_cells = TableCells(want + " x |");
    const std::vector<std::string> have_cells = TableCells(rows[i + 2]);
    if (have_cells.size() < want_cells.size() ||
        !std::equal(want_cells.begin(), want_cells.end() - 1, have_cells.begin())) {
      problems +=
          "row " + std::to_string(i + 1) + ": want '" + want + " <notes> |', have '" + rows[i + 2] + "'\n";
    }
  }
  return problems;
}

std::string RenderConfigReference() {
  std::string out = kReferenceIntro;
  out += MarkdownTable(ParamSection::kTopLevel, std::nullopt);
  out += kReferenceMeasure;
  out += MarkdownTable(ParamSection::kMeasure, std::nullopt);
  out += kReferenceCells;
  out += MarkdownTable(ParamSection::kCell, Scope::kCore);
  out += kReferenceNull;
  out += MarkdownTable(ParamSection::kCell, Scope::kNull);
  out += kReferenceTorch;
  out += MarkdownTable(ParamSection::kCell, Scope::kTorch);
  out += kReferenceInputSize;
  out += MarkdownTable(ParamSection::kCell, Scope::kInputSize);
  out += kReferenceLoad;
  out += MarkdownTable(ParamSection::kCell, Scope::kLoad);
  out += kReferenceOutro;
  return out;
}

}  // namespace dlbench::config
