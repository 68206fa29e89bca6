// Power and energy through nvmlDeviceGetFieldValues (SamplerOptions::nvml_field_values = kAuto),
// against the fake NVML: the same series and values as one call per reading, the fallback to the
// single call per field, and drivers without the function.
#include <gtest/gtest.h>

#include <cstring>
#include <optional>
#include <string>
#include <vector>

#include "monitor/fake_nvml.h"
#include "monitor/fake_procfs.h"
#include "monitor/nvml_sampler.h"

namespace dlbench::monitor {
namespace {

SamplerOptions FieldValues(SamplerOptions::FieldValues mode) {
  SamplerOptions options;
  options.nvml_field_values = mode;
  options.energy_every_n_samples = 3;
  options.pcie_every_n_samples = 2;
  return options;
}

std::unique_ptr<NvmlSampler> Make(const FakeNvml& fake, const SamplerOptions& options) {
  return std::make_unique<NvmlSampler>(fake.Api(), nullptr, std::make_shared<FakeProcFs>(), options);
}

// Rounds of a sampler over two GPUs whose power and energy change every round.
std::vector<SeriesPoint> Rounds(FakeNvml& fake, NvmlSampler& sampler, int rounds) {
  std::vector<SeriesPoint> out;
  for (int round = 0; round < rounds; ++round) {
    for (std::size_t g = 0; g < fake.gpus.size(); ++g) {
      fake.gpus[g].power_mw = 300'001 + 1'237 * round + static_cast<unsigned int>(g);
      fake.gpus[g].energy_mj = 9'000'000'123ULL + 31'337ULL * round + g;
    }
    sampler.Sample(1'000 + round, out);
  }
  return out;
}

std::vector<std::string> Names(const nlohmann::json& list) { return list.get<std::vector<std::string>>(); }

void ExpectSamePoints(const std::vector<SeriesPoint>& want, const std::vector<SeriesPoint>& got) {
  ASSERT_EQ(want.size(), got.size());
  for (std::size_t i = 0; i < want.size(); ++i) {
    EXPECT_EQ(want[i].t_ns, got[i].t_ns) << i;
    EXPECT_EQ(want[i].series, got[i].series) << i;
    EXPECT_EQ(want[i].value, got[i].value) << want[i].series;  // bit-identical, not near
  }
}

// Whatever type the driver stores the power field in, a round's points are those of the single
// calls, in the same order, and the single power and energy calls are not made.
TEST(NvmlFieldValuesTest, SameSeriesAndValuesAsOneCallPerReading) {
  for (NvmlValueType type :
       {NvmlValueType::kUnsignedInt, NvmlValueType::kUnsignedLongLong, NvmlValueType::kDouble}) {
    SCOPED_TRACE(static_cast<int>(type));
    FakeNvml fake;
    fake.gpus.resize(2);
    for (auto& g : fake.gpus) g.power_field_type = type;
    auto per_call = Make(fake, FieldValues(SamplerOptions::FieldValues::kOff));
    const std::vector<SeriesPoint> want = Rounds(fake, *per_call, 7);
    EXPECT_EQ(fake.field_values_calls, 0) << "off never asks for field values";
    const int power_calls = fake.power_calls, energy_calls = fake.energy_calls;
    EXPECT_EQ(power_calls, 2 * 7);
    EXPECT_EQ(energy_calls, 2 * 3);  // rounds 0, 3, 6

    auto batched = Make(fake, FieldValues(SamplerOptions::FieldValues::kAuto));
    ExpectSamePoints(want, Rounds(fake, *batched, 7));
    EXPECT_EQ(fake.field_values_calls, 2 * 7);  // one call per GPU and round
    EXPECT_EQ(fake.power_calls, power_calls);
    EXPECT_EQ(fake.energy_calls, energy_calls);
    const auto d = batched->Describe();
    EXPECT_EQ(d["nvml_field_values"], "auto");
    EXPECT_EQ(Names(d["field_values"]["gpu1"]), (std::vector<std::string>{"power_w", "energy_j"}));
  }
}

// A field the driver does not serve (power averaged over 1 s before Ampere) is read by its
// single call from then on, and no longer asked for; the other field stays batched.
TEST(NvmlFieldValuesTest, AFieldThatWillNeverWorkFallsBackToItsCallForGood) {
  for (NvmlReturn never : {kNvmlErrorNotSupported, kNvmlErrorInvalidArgument, kNvmlErrorNoPermission}) {
    SCOPED_TRACE(never);
    FakeNvml fake;
    auto per_call = Make(fake, FieldValues(SamplerOptions::FieldValues::kOff));
    const std::vector<SeriesPoint> want = Rounds(fake, *per_call, 4);
    const int energy_calls = fake.energy_calls;

    fake.gpus[0].field_errors[kNvmlFiPowerAverage] = never;
    fake.power_calls = 0;
    auto batched = Make(fake, FieldValues(SamplerOptions::FieldValues::kAuto));
    ExpectSamePoints(want, Rounds(fake, *batched, 4));
    EXPECT_EQ(fake.power_calls, 4);
    EXPECT_EQ(fake.energy_calls, energy_calls);
    // Round 3 reads energy: the call asks for energy only. Rounds 1 and 2 need no call at all.
    EXPECT_EQ(fake.last_field_ids, (std::vector<unsigned int>{kNvmlFiTotalEnergyConsumption}));
    EXPECT_EQ(fake.field_values_calls, 2);
    const auto d = batched->Describe();
    EXPECT_EQ(Names(d["field_values"]["gpu0"]), (std::vector<std::string>{"energy_j"}));
    EXPECT_TRUE(d["unsupported"].empty()) << d["unsupported"].dump() << ": the single call still works";
  }
}

// Any other error of one field (a timeout, an unknown driver error) costs that round its single
// call, and the field is asked for again the next round.
TEST(NvmlFieldValuesTest, ATransientFieldErrorFallsBackForThatRoundOnly) {
  FakeNvml fake;
  auto per_call = Make(fake, FieldValues(SamplerOptions::FieldValues::kOff));
  const std::vector<SeriesPoint> want = Rounds(fake, *per_call, 2);
  fake.power_calls = 0;
  fake.gpus[0].field_errors[kNvmlFiPowerAverage] = kNvmlErrorUnknown;
  auto batched = Make(fake, FieldValues(SamplerOptions::FieldValues::kAuto));
  std::vector<SeriesPoint> got = Rounds(fake, *batched, 1);
  EXPECT_EQ(fake.power_calls, 1);
  fake.gpus[0].field_errors.clear();
  std::vector<SeriesPoint> second;
  fake.gpus[0].power_mw = 300'001 + 1'237;
  fake.gpus[0].energy_mj = 9'000'000'123ULL + 31'337ULL;
  batched->Sample(1'001, second);
  got.insert(got.end(), second.begin(), second.end());
  ExpectSamePoints(want, got);
  EXPECT_EQ(fake.power_calls, 1) << "round 1 read power through the field again";
  EXPECT_EQ(fake.last_field_ids, (std::vector<unsigned int>{kNvmlFiPowerAverage}));
}

// A value the field cannot give (the reading unsupported altogether) ends as it does per call:
// absent, listed as unsupported, not asked again either way.
TEST(NvmlFieldValuesTest, AReadingUnsupportedBothWaysIsAbsent) {
  FakeNvml fake;
  fake.gpus[0].energy_mj.reset();
  SamplerOptions options = FieldValues(SamplerOptions::FieldValues::kAuto);
  options.energy_every_n_samples = 1;
  auto sampler = Make(fake, options);
  std::vector<SeriesPoint> out;
  sampler->Sample(1, out);
  sampler->Sample(2, out);
  for (const auto& p : out) EXPECT_NE(p.series, "gpu0.energy_j");
  EXPECT_EQ(fake.energy_calls, 1);
  EXPECT_EQ(fake.last_field_ids, (std::vector<unsigned int>{kNvmlFiPowerAverage}));
  const auto d = sampler->Describe();
  EXPECT_EQ(Names(d["unsupported"]["gpu0"]), (std::vector<std::string>{"energy_j"}));
  EXPECT_EQ(Names(d["field_values"]["gpu0"]), (std::vector<std::string>{"power_w"}));
}

// A library without nvmlDeviceGetFieldValues, or one whose call refuses outright, samples as
// with the option off: the same points, one call per reading.
TEST(NvmlFieldValuesTest, WithoutTheFunctionOrWhenItRefusesEveryReadingIsOneCall) {
  for (bool absent : {true, false}) {
    SCOPED_TRACE(absent ? "absent" : "refuses");
    FakeNvml fake;
    auto per_call = Make(fake, FieldValues(SamplerOptions::FieldValues::kOff));
    const std::vector<SeriesPoint> want = Rounds(fake, *per_call, 4);
    fake.power_calls = 0;
    fake.without_field_values_function = absent;
    fake.field_values_result = absent ? kNvmlSuccess : kNvmlErrorNotSupported;
    auto batched = Make(fake, FieldValues(SamplerOptions::FieldValues::kAuto));
    ExpectSamePoints(want, Rounds(fake, *batched, 4));
    EXPECT_EQ(fake.power_calls, 4);
    EXPECT_EQ(fake.field_values_calls, absent ? 0 : 1) << "a refusal that will not change is not retried";
    EXPECT_TRUE(batched->Describe()["field_values"]["gpu0"].empty());
  }
}

TEST(NvmlFieldValuesTest, FieldValueNumberReadsTheTypeTheDriverNamed) {
  NvmlFieldValue f{};
  f.value_type = static_cast<int>(NvmlValueType::kSignedLongLong);
  const long long negative = -42;
  std::memcpy(&f.value, &negative, sizeof(negative));
  EXPECT_EQ(FieldValueNumber(f), -42.0);
  f.value = 0;
  f.value_type = static_cast<int>(NvmlValueType::kUnsignedShort);
  const unsigned short small = 65535;
  std::memcpy(&f.value, &small, sizeof(small));
  EXPECT_EQ(FieldValueNumber(f), 65535.0);
  f.value_type = 7;  // a type newer than this code
  EXPECT_EQ(FieldValueNumber(f), std::nullopt);
}

}  // namespace
}  // namespace dlbench::monitor
