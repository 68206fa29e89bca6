// ResultStore::ResolveRun: the "~N" and "previous" forms of a run reference, over each backend's
// ResolveRunName, so that every backend reads references alike.
#include <algorithm>
#include <charconv>
#include <string>
#include <vector>

#include "store/result_store.h"

namespace dlbench::store {

namespace {
constexpr std::int64_t kMaxBack = 1'000'000;
}  // namespace

Result<std::int64_t> ResultStore::ResolveRun(const std::string& ref) {
  std::string base = ref;
  std::int64_t back = 0;
  if (ref == "previous") {
    base = "latest";
    back = 1;
  } else if (const auto tilde = ref.rfind('~'); tilde != std::string::npos) {
    base = ref.substr(0, tilde);
    const std::string count = ref.substr(tilde + 1);
    const auto [end, ec] = std::from_chars(count.data(), count.data() + count.size(), back);
    if (base.empty() || count.empty() || ec != std::errc() || end != count.data() + count.size() ||
        back < 1 || back > kMaxBack) {
      return MakeError(ErrorKind::kInvalidInput,
                       "run reference '" + ref + "': expected RUN~N with N a whole number from 1 to " +
                           std::to_string(kMaxBack) + " (latest~1 is the run before the latest)");
    }
    if (base == "previous")
      return MakeError(ErrorKind::kInvalidInput, "run reference '" + ref + "': write latest~N");
  }
  auto id = ResolveRunName(base);
  if (!id.ok() || back == 0) return id;
  auto runs = ListRuns();
  if (!runs.ok()) return runs.error();
  std::vector<std::int64_t> ids;
  for (const auto& r : *runs) ids.push_back(r.id);
  std::sort(ids.begin(), ids.end());
  const auto at = std::lower_bound(ids.begin(), ids.end(), *id);
  const std::int64_t before = at - ids.begin();
  if (before < back) {
    return MakeError(ErrorKind::kNotFound, "run reference '" + ref + "': " + std::to_string(before) +
                                               (before == 1 ? " run comes" : " runs come") + " before run " +
                                               std::to_string(*id) + " in " + Describe());
  }
  return *(at - back);
}

}  // namespace dlbench::store
