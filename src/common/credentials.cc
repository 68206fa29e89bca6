#include "common/credentials.h"

#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <string>

namespace dlbench {
namespace {

constexpr std::string_view kPasswordKey = "password=";

bool IsSpaceOrQuote(char c) {
  return c == ' ' || c == '\t' || c == '\r' || c == '\n' || c == '"' || c == '\'';
}

// The span [begin, end) of the password in the user info of the URL whose "://" is at `scheme_end`,
// or begin == end when it has none. The authority runs to the first '?', '#', space or quote; its
// user info ends at the last '@' (a password may hold an unescaped '/' or '@'), and the password
// starts after the user's first ':'.
std::pair<std::size_t, std::size_t> UserInfoPassword(std::string_view text, std::size_t scheme_end) {
  const std::size_t begin = scheme_end + 3;
  std::size_t end = begin;
  while (end < text.size() && text[end] != '?' && text[end] != '#' && !IsSpaceOrQuote(text[end])) ++end;
  const std::size_t at = text.substr(begin, end - begin).rfind('@');
  if (at == std::string_view::npos) return {begin, begin};
  const std::size_t colon = text.substr(begin, at).find(':');
  if (colon == std::string_view::npos) return {begin, begin};
  return {begin + colon + 1, begin + at};
}

// The span of the value of the password= parameter whose key starts at `key`.
std::pair<std::size_t, std::size_t> ParameterValue(std::string_view text, std::size_t key) {
  std::size_t begin = key + kPasswordKey.size();
  std::size_t end = begin;
  if (begin < text.size() && text[begin] == '\'') {
    // libpq's key='value' form: backslash escapes, up to the closing quote.
    end = begin + 1;
    while (end < text.size() && text[end] != '\'') end += text[end] == '\\' ? 2 : 1;
    end = std::min(end + 1, text.size());
    return {begin, end};
  }
  while (end < text.size() && text[end] != '&' && !IsSpaceOrQuote(text[end])) ++end;
  return {begin, end};
}

std::size_t FindPasswordKey(std::string_view text, std::size_t from) {
  for (std::size_t i = from; i + kPasswordKey.size() <= text.size(); ++i) {
    bool match = true;
    for (std::size_t j = 0; j < kPasswordKey.size() && match; ++j) {
      match = std::tolower(static_cast<unsigned char>(text[i + j])) == kPasswordKey[j];
    }
    if (match) return i;
  }
  return std::string_view::npos;
}

std::string PercentDecoded(std::string_view text) {
  auto hex = [](char c) -> int {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
  };
  std::string out;
  for (std::size_t i = 0; i < text.size(); ++i) {
    if (text[i] == '%' && i + 2 < text.size() && hex(text[i + 1]) >= 0 && hex(text[i + 2]) >= 0) {
      out.push_back(static_cast<char>(hex(text[i + 1]) * 16 + hex(text[i + 2])));
      i += 2;
    } else {
      out.push_back(text[i]);
    }
  }
  return out;
}

}  // namespace

std::string MaskPasswords(std::string_view text) {
  std::string out(text);
  for (std::size_t pos = out.find("://"); pos != std::string::npos; pos = out.find("://", pos + 3)) {
    auto [begin, end] = UserInfoPassword(out, pos);
    if (begin < end) out.replace(begin, end - begin, kMaskedSecret);
  }
  for (std::size_t key = FindPasswordKey(out, 0); key != std::string::npos;) {
    auto [begin, end] = ParameterValue(out, key);
    if (begin < end) out.replace(begin, end - begin, kMaskedSecret);
    key = FindPasswordKey(out, begin + (begin < end ? kMaskedSecret.size() : 0));
  }
  return out;
}

std::vector<std::string> UrlPasswords(std::string_view url) {
  std::vector<std::string> found;
  auto add = [&](std::string_view raw) {
    if (raw.empty()) return;
    found.emplace_back(raw);
    std::string decoded = PercentDecoded(raw);
    if (decoded != raw && !decoded.empty()) found.push_back(std::move(decoded));
  };
  for (std::size_t pos = url.find("://"); pos != std::string_view::npos; pos = url.find("://", pos + 3)) {
    auto [begin, end] = UserInfoPassword(url, pos);
    add(url.substr(begin, end - begin));
  }
  for (std::size_t key = FindPasswordKey(url, 0); key != std::string_view::npos;
       key = FindPasswordKey(url, key + kPasswordKey.size())) {
    auto [begin, end] = ParameterValue(url, key);
    std::string_view value = url.substr(begin, end - begin);
    if (value.size() >= 2 && value.front() == '\'' && value.back() == '\'') {
      add(value.substr(1, value.size() - 2));
    }
    add(value);
  }
  std::sort(found.begin(), found.end(), [](const std::string& a, const std::string& b) {
    return a.size() != b.size() ? a.size() > b.size() : a < b;
  });
  found.erase(std::unique(found.begin(), found.end()), found.end());
  return found;
}

std::string ScrubSecrets(std::string_view text, const std::vector<std::string>& secrets) {
  std::string out(text);
  for (const std::string& secret : secrets) {
    if (secret.empty()) continue;
    for (std::size_t pos = out.find(secret); pos != std::string::npos;
         pos = out.find(secret, pos + kMaskedSecret.size())) {
      out.replace(pos, secret.size(), kMaskedSecret);
    }
  }
  return MaskPasswords(out);
}

bool IsPostgresLocation(std::string_view location) {
  auto starts_with = [location](std::string_view prefix) {
    if (location.size() < prefix.size()) return false;
    for (std::size_t i = 0; i < prefix.size(); ++i) {
      if (std::tolower(static_cast<unsigned char>(location[i])) != prefix[i]) return false;
    }
    return true;
  };
  return starts_with("postgresql://") || starts_with("postgres://");
}

std::string LocalStateDir(std::string_view location) {
  std::string root;
  if (const char* dir = std::getenv("DLBENCH_SPILL_DIR"); dir != nullptr && *dir != '\0') {
    root = dir;
  } else if (const char* state = std::getenv("XDG_STATE_HOME"); state != nullptr && *state == '/') {
    root = std::string(state) + "/dlbench/spill";
  } else if (const char* home = std::getenv("HOME"); home != nullptr && *home == '/') {
    root = std::string(home) + "/.local/state/dlbench/spill";
  } else {
    root = "/tmp/dlbench-spill-" + std::to_string(::getuid());
  }
  // The store's name: its location without the query and with the password taken out entirely.
  std::string name = MaskPasswords(location.substr(0, location.find('?')));
  const std::string masked = std::string(":") + std::string(kMaskedSecret) + "@";
  if (auto at = name.find(masked); at != std::string::npos) name.replace(at, masked.size(), "@");
  std::string folder;
  for (char c : name) {
    const bool keep = std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '.';
    if (keep) {
      folder.push_back(c);
    } else if (folder.empty() || folder.back() != '_') {
      folder.push_back('_');
    }
  }
  while (!folder.empty() && folder.back() == '_') folder.pop_back();
  return root + "/" + (folder.empty() ? "store" : folder);
}

}  // namespace dlbench
