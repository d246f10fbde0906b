#include "halite/wire/event.h"

#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>

#include "halite/wire/encoding.h"

namespace halite::wire {
namespace {

Value FromJson(const nlohmann::ordered_json& j) {
  if (j.is_null()) return Value();
  if (j.is_boolean()) return Value(j.get<bool>());
  if (j.is_number_integer()) return Value(j.get<long long>());  // NOLINT
  if (j.is_number_float()) return Value(j.get<double>());
  if (j.is_string()) return Value(j.get<std::string>());
  if (j.is_array()) {
    Array a;
    for (const auto& e : j) a.push_back(FromJson(e));
    return Value(std::move(a));
  }
  Map m;
  for (const auto& [k, v] : j.items()) m.emplace_back(Value(k), FromJson(v));
  return Value(std::move(m));
}

TEST(EventTest, PackedEventsAndFramesMatchSalt) {
  std::ifstream in(std::string(HALITE_TEST_DATA_DIR) + "/vectors/events.json");
  auto vectors = nlohmann::ordered_json::parse(in);
  ASSERT_EQ(vectors["events"].size(), 4u);
  for (const auto& e : vectors["events"]) {
    SCOPED_TRACE(e["tag"].get<std::string>());
    std::string packed = PackEvent(e["tag"].get<std::string>(), FromJson(e["data"]));
    EXPECT_EQ(HexEncode(packed), e["packed_hex"].get<std::string>());
    EXPECT_EQ(HexEncode(FrameEvent(packed)), e["pull_side_frame_hex"].get<std::string>());
    auto back = UnpackEvent(packed);
    ASSERT_TRUE(back.ok()) << back.error().ToString();
    EXPECT_EQ(back->tag, e["tag"].get<std::string>());
    EXPECT_EQ(back->data, FromJson(e["data"]));
  }
}

TEST(EventTest, MalformedEventsAreErrors) {
  EXPECT_FALSE(UnpackEvent("no separator").ok());
  EXPECT_FALSE(UnpackEvent(std::string("tag\n\n\x01", 6)).ok());  // data not a map
  EXPECT_FALSE(UnpackEvent("tag\n\n\xc1").ok());
}

TEST(EventTest, ValidEventTagRefusesWhatWouldNotPackAsItself) {
  EXPECT_TRUE(ValidEventTag("salt/job/20250101000000000000/prog/web1/0"));
  EXPECT_TRUE(ValidEventTag(std::string(kMaxEventTagBytes, 'a')));
  EXPECT_FALSE(ValidEventTag(std::string(kMaxEventTagBytes + 1, 'a')));
  EXPECT_FALSE(ValidEventTag(""));
  // The smuggling form: packed, its tag ends at the first "\n\n", so readers see "salt/auth"
  // (with data that absorbs the rest, it decodes whole).
  const std::string smuggled = std::string("salt/auth\n\n") + Pack(Value::EmptyMap());
  EXPECT_FALSE(ValidEventTag(smuggled));
  const std::string packed = PackEvent(smuggled, Value::EmptyMap());
  EXPECT_EQ(packed.substr(0, packed.find("\n\n")), "salt/auth");
  EXPECT_FALSE(ValidEventTag(std::string("a\0b", 3)));
  EXPECT_FALSE(ValidEventTag("a\x1b[31m"));
  EXPECT_FALSE(ValidEventTag("a\x7f"));
  EXPECT_FALSE(ValidEventTag("a\rb"));
}

TEST(EventTest, StampIsUtcIsoWithMicroseconds) {
  auto t = std::chrono::system_clock::time_point(std::chrono::microseconds(1735732800123456LL));
  EXPECT_EQ(IsoStamp(t), "2025-01-01T12:00:00.123456");
  Value data = Value::MapOf({{"_stamp", "old"}, {"a", 1}});
  AddStamp(data, t);
  EXPECT_EQ(*data.map()->back().first.str(), "_stamp");
  EXPECT_EQ(*data.FindStr("_stamp"), "2025-01-01T12:00:00.123456");
}

// Salt's max_event_size trimming (salt.utils.dicttrim.trim_dict), with packed sizes.
TEST(TrimEventDataTest, LargeValuesBecomeValueTrimmedAsSaltTrimsThem) {
  constexpr std::size_t kMax = 1 << 20;
  Value small = Value::MapOf({{"a", 1}, {"b", "x"}});
  const std::string before = small.ToJson();
  EXPECT_EQ(TrimEventData(small, kMax), EventTrim::kFits);
  EXPECT_EQ(small.ToJson(), before);

  // One value over half the limit: it alone goes, in a nested map too; the rest stays.
  Value big =
      Value::MapOf({{"blob", std::string(2 << 20, 'x')},
                    {"keep", "small"},
                    {"nested", Value::MapOf({{"inner", std::string(600 << 10, 'y')}, {"n", 7}})}});
  EXPECT_EQ(TrimEventData(big, kMax), EventTrim::kTrimmed);
  EXPECT_EQ(
      big.ToJson(),
      R"({"blob": "VALUE_TRIMMED", "keep": "small", "nested": {"inner": "VALUE_TRIMMED", "n": 7}})");

  // Later passes take smaller values (40 %, 30 % ...) until it fits.
  Value stepped = Value::MapOf({{"a", std::string(450 << 10, 'a')},
                                {"b", std::string(350 << 10, 'b')},
                                {"c", std::string(250 << 10, 'c')},
                                {"d", std::string(10 << 10, 'd')}});
  EXPECT_EQ(TrimEventData(stepped, kMax), EventTrim::kTrimmed);
  EXPECT_EQ(*stepped.FindStr("a"), "VALUE_TRIMMED");
  EXPECT_EQ(*stepped.FindStr("b"), std::string(350 << 10, 'b'));  // 450 + 350 + 250 > 1 MiB
  EXPECT_EQ(*stepped.FindStr("c"), std::string(250 << 10, 'c'));  // 350 + 250 + 10 < 1 MiB
  EXPECT_LT(Pack(stepped).size(), kMax);

  // A list is measured with its items (Salt's getsizeof leaves them out and keeps it).
  Array items;
  for (int i = 0; i < 100; ++i) items.emplace_back(std::string(20 << 10, 'z'));
  Value list = Value::MapOf({{"items", Value(std::move(items))}});
  EXPECT_EQ(TrimEventData(list, kMax), EventTrim::kTrimmed);
  EXPECT_EQ(list.ToJson(), R"({"items": "VALUE_TRIMMED"})");

  // Many values, none over a tenth of the limit: still too large, so the caller drops it.
  Value many = Value::EmptyMap();
  for (int i = 0; i < 3000; ++i)
    many.map()->emplace_back("k" + std::to_string(i), std::string(1024, 'm'));
  EXPECT_EQ(TrimEventData(many, kMax), EventTrim::kTooLarge);
  Value not_a_map(std::string(2 << 20, 'x'));
  EXPECT_EQ(TrimEventData(not_a_map, kMax), EventTrim::kTooLarge);
}

}  // namespace
}  // namespace halite::wire
