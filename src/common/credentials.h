// Keeping credentials out of everything dlbench shows or stores. A store location such as
// postgresql://alice:s3cret@db:5432/bench carries a password; logs, error messages, the
// environment fingerprint, run records and ResultStore::Describe() get it masked (docs/storage.md,
// "Credentials").
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace dlbench {

inline constexpr std::string_view kMaskedSecret = "***";

// `text` with every password it holds replaced by "***": the password of each URL's user info
// (scheme://user:PASSWORD@host, the span after the first ':' up to the last '@' of the authority)
// and the value of each `password=` parameter (a URL query or a libpq key=value string, case
// insensitive, up to '&', whitespace or the end; a quoted value up to its closing quote). Text
// without either comes back unchanged. Safe on any input, including text that is not a URL.
std::string MaskPasswords(std::string_view text);

// The passwords `url` holds (user info and password= parameters), both as written and
// percent-decoded, longest first, so that a message that quotes one in either form can be
// scrubbed with ScrubSecrets. Empty when there is none.
std::vector<std::string> UrlPasswords(std::string_view url);

// `text` with every occurrence of each non-empty secret replaced by "***", and then
// MaskPasswords applied: for messages from libraries that may echo what they were given.
std::string ScrubSecrets(std::string_view text, const std::vector<std::string>& secrets);

// Whether a store location names a PostgreSQL server: it starts with postgresql:// or
// postgres:// (any case). Anything else is the path of a SQLite file (store::BackendOf).
bool IsPostgresLocation(std::string_view location);

// The local folder of a server store (its spill files, the progress file of a run writing to it):
// $DLBENCH_SPILL_DIR, else $XDG_STATE_HOME/dlbench/spill, else ~/.local/state/dlbench/spill, else
// /tmp/dlbench-spill-<uid>; then one folder named from the location without its query and without
// its password (never a name that holds one).
std::string LocalStateDir(std::string_view location);

}  // namespace dlbench
