// MaskPasswords is the one place a store location's password is hidden (docs/storage.md,
// "Credentials"): every form a user may write, and text that must come back unchanged.
#include "common/credentials.h"

#include <gtest/gtest.h>

namespace dlbench {
namespace {

TEST(MaskPasswordsTest, HidesEveryPasswordAndNothingElse) {
  struct Case {
    const char* in;
    const char* out;
  };
  const Case cases[] = {
      {"postgresql://alice:s3cret@db.example:5432/bench", "postgresql://alice:***@db.example:5432/bench"},
      {"postgres://alice:s3cret@db/bench?sslmode=require", "postgres://alice:***@db/bench?sslmode=require"},
      {"postgresql://alice@db:5432/bench", "postgresql://alice@db:5432/bench"},
      {"postgresql://db/bench", "postgresql://db/bench"},
      {"postgresql:///bench?host=/tmp", "postgresql:///bench?host=/tmp"},
      {"postgresql://alice:@db/bench", "postgresql://alice:@db/bench"},
      // Unescaped '@' and '/' inside the password: everything up to the last '@' is user info.
      {"postgresql://alice:p@ss/w:rd@db/bench", "postgresql://alice:***@db/bench"},
      {"postgresql://alice:p%40ss@db/bench", "postgresql://alice:***@db/bench"},
      {"postgresql://alice@db/bench?password=s3cret&sslmode=disable",
       "postgresql://alice@db/bench?password=***&sslmode=disable"},
      {"postgresql://alice@db/bench?sslmode=disable&PASSWORD=s3cret",
       "postgresql://alice@db/bench?sslmode=disable&PASSWORD=***"},
      {"host=db user=alice password=s3cret dbname=bench", "host=db user=alice password=*** dbname=bench"},
      {"host=db password='a b\\'c' dbname=bench", "host=db password=*** dbname=bench"},
      {"cannot connect to postgresql://bob:hunter2@10.0.0.1/x: refused",
       "cannot connect to postgresql://bob:***@10.0.0.1/x: refused"},
      {"two: postgresql://a:1@h/d and postgres://b:2@h/d",
       "two: postgresql://a:***@h/d and postgres://b:***@h/d"},
      {"results/dlbench.db", "results/dlbench.db"},
      {"", ""},
      {"://", "://"},
      {"x://@", "x://@"},
      {"password=", "password="},
  };
  for (const Case& c : cases) EXPECT_EQ(MaskPasswords(c.in), c.out) << c.in;
}

TEST(MaskPasswordsTest, UrlPasswordsFindsRawAndDecodedForms) {
  EXPECT_TRUE(UrlPasswords("postgresql://alice@db/bench").empty());
  EXPECT_EQ(UrlPasswords("postgresql://alice:s3cret@db/bench"), (std::vector<std::string>{"s3cret"}));
  EXPECT_EQ(UrlPasswords("postgresql://alice:p%40ss@db/bench"), (std::vector<std::string>{"p%40ss", "p@ss"}));
  EXPECT_EQ(UrlPasswords("postgresql://alice@db/bench?password=longer-one"),
            (std::vector<std::string>{"longer-one"}));
}

TEST(MaskPasswordsTest, ScrubSecretsRemovesEchoedSecretsInAnyPosition) {
  const auto secrets = UrlPasswords("postgresql://alice:p%40ss@db/bench");
  EXPECT_EQ(ScrubSecrets("FATAL: bad password p@ss for alice (p%40ss)", secrets),
            "FATAL: bad password *** for alice (***)");
  EXPECT_EQ(ScrubSecrets("nothing secret", {}), "nothing secret");
  EXPECT_EQ(ScrubSecrets("postgresql://u:x@h/d", {""}), "postgresql://u:***@h/d");
}

}  // namespace
}  // namespace dlbench
