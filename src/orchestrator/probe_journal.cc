#include "orchestrator/probe_journal.h"

#include <fmt/core.h>

#include <cstdio>
#include <utility>

#include "common/files.h"
#include "store/spill_store.h"

namespace dlbench::orchestrator {
namespace {

constexpr int kJournalVersion = 1;

}  // namespace

ProbeJournal::ProbeJournal(const std::string& log_dir, int cell_index, nlohmann::json fingerprint)
    : fingerprint_(std::move(fingerprint)) {
  if (log_dir.empty()) return;
  path_ = fmt::format("{}/cell-{:04d}.probes.json", log_dir, cell_index);
  const Result<std::string> text = ReadFile(path_);
  if (!text.ok()) return;
  const nlohmann::json doc = nlohmann::json::parse(*text, nullptr, /*allow_exceptions=*/false);
  // The fingerprint is compared as the file stores it (a round trip through text), so that its
  // doubles compare as written.
  const nlohmann::json expected = nlohmann::json::parse(fingerprint_.dump());
  if (!doc.is_object() || doc.value("version", 0) != kJournalVersion || !doc.contains("fingerprint") ||
      doc["fingerprint"] != expected || !doc.contains("probes") || !doc["probes"].is_array())
    return;
  for (const nlohmann::json& p : doc["probes"]) {
    if (!p.is_object() || !p.contains("value") || !p["value"].is_number_integer() || !p.contains("record"))
      break;
    // A record that does not read back ends the replay there.
    if (!store::CellFromJson(p["record"]).ok()) break;
    values_.push_back(p["value"].get<std::int64_t>());
    records_.push_back(p["record"]);
  }
  kept_at_start_ = values_.size();
}

std::optional<record::CellRecord> ProbeJournal::Next(std::int64_t value) {
  if (next_ < values_.size() && values_[next_] == value) {
    Result<record::CellRecord> rec = store::CellFromJson(records_[next_]);
    if (rec.ok()) {
      ++next_;
      return std::move(*rec);
    }
  }
  values_.resize(next_);
  records_.resize(next_);
  return std::nullopt;
}

void ProbeJournal::Add(std::int64_t value, const record::CellRecord& probe) {
  if (path_.empty() || !error_.empty()) return;
  if (probe.outcome != record::Outcome::kOk && probe.outcome != record::Outcome::kOom) return;
  // Anything after the replayed part was dropped by Next; this probe follows it.
  values_.resize(next_);
  records_.resize(next_);
  values_.push_back(value);
  records_.push_back(store::CellToJson(probe));
  ++next_;
  nlohmann::json list = nlohmann::json::array();
  for (std::size_t i = 0; i < values_.size(); ++i)
    list.push_back({{"value", values_[i]}, {"record", records_[i]}});
  const nlohmann::json doc = {
      {"version", kJournalVersion}, {"fingerprint", fingerprint_}, {"probes", std::move(list)}};
  if (const Status st = WriteFileAtomic(path_, doc.dump()); !st.ok()) error_ = st.error().message;
}

void ProbeJournal::Remove() {
  if (path_.empty()) return;
  std::remove(path_.c_str());
}

}  // namespace dlbench::orchestrator
