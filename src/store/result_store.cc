#include "store/result_store.h"

namespace dlbench::store {

nlohmann::json RunSelectionToJson(const RunSelection& selection) {
  nlohmann::json out = nlohmann::json::object();
  if (!selection.only.empty()) out["only"] = selection.only;
  if (!selection.shard.empty()) out["shard"] = selection.shard;
  return out;
}

Result<RunSelection> RunSelectionFromJson(const nlohmann::json& json) {
  auto bad = [&](const std::string& why) {
    return MakeError(ErrorKind::kStore,
                     "run selection " + json.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) +
                         " is not {\"only\": [text, ...], \"shard\": \"K/N\"}: " + why);
  };
  if (!json.is_object()) return bad("not an object");
  RunSelection selection;
  for (const auto& [key, value] : json.items()) {
    if (key == "only") {
      if (!value.is_array()) return bad("only is not an array");
      for (const auto& filter : value) {
        if (!filter.is_string()) return bad("an only filter is not text");
        selection.only.push_back(filter.get<std::string>());
      }
    } else if (key == "shard") {
      if (!value.is_string()) return bad("shard is not text");
      selection.shard = value.get<std::string>();
    } else {
      return bad("unknown key '" + key + "'");
    }
  }
  return selection;
}

}  // namespace dlbench::store
