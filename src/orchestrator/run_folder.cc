#include "orchestrator/run_folder.h"

#include <fmt/core.h>

#include <filesystem>

#include "common/hash.h"

namespace dlbench::orchestrator {

std::string StoreFolderName(const std::string& store_key) {
  std::string name = store_key;
  while (!name.empty() && name.back() == '/') name.pop_back();
  if (const auto slash = name.rfind('/'); slash != std::string::npos) name = name.substr(slash + 1);
  if (const auto query = name.find('?'); query != std::string::npos) name.resize(query);  // URL options
  if (const auto dot = name.rfind('.'); dot != std::string::npos && dot > 0) name.resize(dot);
  std::string kept;
  for (char c : name) {
    const bool plain = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                       c == '.' || c == '_' || c == '-';
    kept += plain ? c : '_';
    if (kept.size() == 40) break;
  }
  if (kept.empty() || kept == "." || kept == "..") kept = "store";
  return fmt::format("{}-{:08x}", kept, static_cast<std::uint32_t>(Fnv1a64(store_key)));
}

std::string RunFolder(const std::string& out_dir, const std::string& store_key, std::int64_t run_id) {
  std::error_code ec;
  std::filesystem::path out = std::filesystem::absolute(out_dir.empty() ? "." : out_dir, ec);
  if (ec) out = out_dir;
  return (out.lexically_normal() / StoreFolderName(store_key) / fmt::format("run-{}", run_id)).string();
}

std::optional<std::string> StoredRunFolder(const std::vector<record::CellRecord>& cells) {
  for (const record::CellRecord& c : cells) {
    for (const std::string* path : {&c.stderr_path, &c.stdout_path}) {
      if (path->empty()) continue;
      const std::filesystem::path parent = std::filesystem::path(*path).parent_path();
      if (!parent.empty()) return parent.string();
    }
  }
  return std::nullopt;
}

}  // namespace dlbench::orchestrator
