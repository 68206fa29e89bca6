// The null runner's fault table and the registry agree: every `inject` value the registry allows is
// a fault the runner knows, in the same order, and so are the wrong_type fields.
#include "runners/null/faults.h"

#include <gtest/gtest.h>

#include "config/registry.h"

namespace dlbench::nullrunner {
namespace {

TEST(NullFaultsTest, TheRegistryAllowsExactlyTheFaultTable) {
  const config::ParamSpec* inject = config::FindParam("inject", config::ParamSection::kCell);
  ASSERT_NE(inject, nullptr);
  std::vector<std::string> names;
  for (const FaultInfo& f : Faults()) names.emplace_back(f.name);
  EXPECT_EQ(inject->allowed, names);
  for (const FaultInfo& f : Faults()) {
    EXPECT_EQ(ParseFault(f.name), f.fault) << f.name;
    EXPECT_EQ(FaultName(f.fault), f.name);
  }
  EXPECT_FALSE(ParseFault("explode").has_value());
  EXPECT_EQ(FaultNames().rfind("none, crash, hang, ", 0), 0u) << FaultNames();
}

TEST(NullFaultsTest, TheRegistryAllowsExactlyTheWrongTypeFields) {
  const config::ParamSpec* field = config::FindParam("fault_field", config::ParamSection::kCell);
  ASSERT_NE(field, nullptr);
  std::vector<std::string> names(WrongTypeFields().begin(), WrongTypeFields().end());
  EXPECT_EQ(field->allowed, names);
}

}  // namespace
}  // namespace dlbench::nullrunner
