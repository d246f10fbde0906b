#include "halite/wire/msgpack.h"

#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>

#include "allocation_meter.h"
#include "halite/wire/encoding.h"
#include "halite/wire/keyed_map.h"

namespace halite::wire {
namespace {

nlohmann::json LoadVectors() {
  std::ifstream in(std::string(HALITE_TEST_DATA_DIR) + "/vectors/msgpack.json");
  return nlohmann::json::parse(in);
}

// The vectors render Python objects as JSON; {"hex"}, {"bigint"} and {"datetime"} mark the
// types JSON lacks.
Value FromJson(const nlohmann::json& j) {
  if (j.is_null()) return Value();
  if (j.is_boolean()) return Value(j.get<bool>());
  if (j.is_number_unsigned()) return Value(j.get<unsigned long long>());  // NOLINT
  if (j.is_number_integer()) return Value(j.get<long long>());            // NOLINT
  if (j.is_number_float()) return Value(j.get<double>());
  if (j.is_string()) return Value(j.get<std::string>());
  if (j.is_array()) {
    Array a;
    for (const auto& e : j) a.push_back(FromJson(e));
    return Value(std::move(a));
  }
  if (j.size() == 1 && j.contains("hex"))
    return Value::Bin(*HexDecode(j["hex"].get<std::string>()));
  if (j.size() == 1 && j.contains("bigint")) return Value(j["bigint"].get<std::string>());
  if (j.size() == 1 && j.contains("datetime")) {
    std::string iso = j["datetime"].get<std::string>();  // 2025-01-02T03:04:05.678901
    std::string salt = iso.substr(0, 4) + iso.substr(5, 2) + iso.substr(8, 2) + iso.substr(10);
    return Value(Ext{78, salt});
  }
  Map m;
  for (const auto& [k, v] : j.items()) m.emplace_back(Value(k), FromJson(v));
  return Value(std::move(m));
}

TEST(MsgpackTest, EveryVectorPacksByteExactInBothModes) {
  auto vectors = LoadVectors();
  ASSERT_GE(vectors["cases"].size(), 10u);
  for (const auto& c : vectors["cases"]) {
    SCOPED_TRACE(c["name"].get<std::string>());
    Value v = FromJson(c["value"]);
    EXPECT_EQ(HexEncode(Pack(v, Packing::kWire)),
              c["wire_use_bin_type_false_hex"].get<std::string>());
    EXPECT_EQ(HexEncode(Pack(v, Packing::kBinType)),
              c["ipc_file_use_bin_type_true_hex"].get<std::string>());
  }
}

TEST(MsgpackTest, EveryVectorRoundTripsThroughUnpack) {
  auto vectors = LoadVectors();
  for (const auto& c : vectors["cases"]) {
    SCOPED_TRACE(c["name"].get<std::string>());
    for (const char* field : {"wire_use_bin_type_false_hex", "ipc_file_use_bin_type_true_hex"}) {
      std::string bytes = *HexDecode(c[field].get<std::string>());
      auto v = Unpack(bytes);
      ASSERT_TRUE(v.ok()) << v.error().ToString();
      EXPECT_EQ(*v, FromJson(c["value"]));
      Packing mode = std::string(field).starts_with("wire") ? Packing::kWire : Packing::kBinType;
      EXPECT_EQ(HexEncode(Pack(*v, mode)), HexEncode(bytes));
    }
  }
}

TEST(MsgpackTest, PackedSizeBoundIsAtLeastThePackedSize) {
  auto vectors = LoadVectors();
  for (const auto& c : vectors["cases"]) {
    SCOPED_TRACE(c["name"].get<std::string>());
    Value v = FromJson(c["value"]);
    EXPECT_GE(PackedSizeBound(v), Pack(v, Packing::kWire).size());
    EXPECT_GE(PackedSizeBound(v), Pack(v, Packing::kBinType).size());
  }
  const Value big = Value::MapOf({{"s", std::string(70000, 'x')},
                                  {"l", Value(Array(20, Value(-1.5)))},
                                  {"i", Value(std::uint64_t{1} << 63)}});
  EXPECT_GE(PackedSizeBound(big), Pack(big, Packing::kWire).size());
  EXPECT_LE(PackedSizeBound(big), Pack(big, Packing::kWire).size() + 64);
}

TEST(MsgpackTest, StrAndBinReadAsOneByteStringWithoutUtf8Checks) {
  std::string invalid_utf8 = "\xff\xfe\x80";
  auto as_str = Unpack("\xa3" + invalid_utf8);
  auto as_bin = Unpack(std::string("\xc4\x03", 2) + invalid_utf8);
  ASSERT_TRUE(as_str.ok());
  ASSERT_TRUE(as_bin.ok());
  EXPECT_EQ(*as_str->str(), invalid_utf8);
  EXPECT_EQ(*as_bin->str(), invalid_utf8);
  EXPECT_EQ(*as_str, *as_bin);
  EXPECT_TRUE(as_bin->is_binary_str());
  // str8 from a modern packer is accepted even though we never emit it on the wire.
  auto str8 = Unpack(std::string("\xd9\x02hi", 4));
  ASSERT_TRUE(str8.ok());
  EXPECT_EQ(*str8->str(), "hi");
}

TEST(MsgpackTest, MapKeyOrderIsPreserved) {
  Value m = Value::MapOf({{"zeta", 1}, {"alpha", 2}, {"mid", 3}});
  auto back = Unpack(Pack(m));
  ASSERT_TRUE(back.ok());
  ASSERT_EQ(back->map()->size(), 3u);
  EXPECT_EQ(*(*back->map())[0].first.str(), "zeta");
  EXPECT_EQ(*(*back->map())[2].first.str(), "mid");
}

TEST(MsgpackTest, SetEraseAndFindWorkOnMaps) {
  Value m = Value::EmptyMap();
  m.Set("a", 1);
  m.Set("b", "x");
  m.Set("a", 5);
  EXPECT_EQ(*m.Find("a")->int64(), 5);
  EXPECT_EQ(*m.FindStr("b"), "x");
  EXPECT_EQ(m.FindStr("a"), nullptr);
  EXPECT_TRUE(m.Erase("a"));
  EXPECT_FALSE(m.Erase("a"));
  EXPECT_EQ(m.Find("a"), nullptr);
  EXPECT_EQ(Value(3).Find("a"), nullptr);
}

TEST(MsgpackTest, ExtTypesPassThrough) {
  std::string salt_const = std::string("\xd4\x4f\x01", 3);  // fixext1, type 79
  auto v = Unpack(salt_const);
  ASSERT_TRUE(v.ok());
  ASSERT_TRUE(v->is_ext());
  EXPECT_EQ(v->ext()->type, 79);
  EXPECT_EQ(Pack(*v), salt_const);
}

TEST(MsgpackTest, TruncatedInputIsAnErrorAtEveryCut) {
  Value v = Value::MapOf({{"cmd", "_return"},
                          {"return", Value(Array{1, "two", 3.5, Value::Bin("\x00\x01")})},
                          {"big", Value(std::string(300, 'x'))}});
  std::string bytes = Pack(v);
  for (std::size_t cut = 0; cut < bytes.size(); ++cut) {
    auto r = Unpack(std::string_view(bytes).substr(0, cut));
    ASSERT_FALSE(r.ok()) << "cut at " << cut;
    EXPECT_EQ(r.error().code, ErrorCode::kInvalidArgument);
  }
  EXPECT_TRUE(Unpack(bytes).ok());
}

TEST(MsgpackTest, TrailingBytesAreRejected) {
  auto r = Unpack(std::string("\xc0\xc0", 2));
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("trailing"), std::string::npos);
}

TEST(MsgpackTest, HugeDeclaredLengthsFailWithoutAllocating) {
  // array32 / map32 / str32 / bin32 claiming 4 billion entries, with 3 bytes behind them.
  for (const char* head : {"\xdd\xff\xff\xff\xff", "\xdf\xff\xff\xff\xff", "\xdb\xff\xff\xff\xff",
                           "\xc6\xff\xff\xff\xff", "\xc9\xff\xff\xff\xff"}) {
    auto r = Unpack(std::string(head, 5) + "abc");
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.error().code, ErrorCode::kInvalidArgument);
  }
}

std::string Array32Header(std::uint32_t n) {
  std::string out = "\xdd";
  for (int shift = 24; shift >= 0; shift -= 8) out.push_back(static_cast<char>(n >> shift));
  return out;
}

// Passes on the old decoder too (it already compared the count with the bytes left); kept so
// that the node budget can never turn this into a 4-billion-element reserve.
TEST(MsgpackTest, ArrayDeclaringFourBillionElementsIsRefusedAtOnce) {
  const std::string doc = Array32Header(0xffffffffu) + std::string(16, '\xc0');
  testing_support::AllocationMeter meter;
  auto r = Unpack(doc);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code, ErrorCode::kInvalidArgument);
  EXPECT_LT(meter.PeakBytes(), 4096u);
}

// Fails on the old decoder, which had no node budget: every document below decoded.
TEST(MsgpackTest, DocumentOverTheNodeBudgetIsResourceExhausted) {
  UnpackLimits limits;
  limits.max_nodes = 100;
  // The array itself and its elements each count one.
  EXPECT_TRUE(Unpack(Pack(Value(Array(99))), limits).ok());
  auto flat = Unpack(Pack(Value(Array(100))), limits);
  ASSERT_FALSE(flat.ok());
  EXPECT_EQ(flat.error().code, ErrorCode::kResourceExhausted);
  EXPECT_NE(flat.error().message.find("more than 100 values"), std::string::npos)
      << flat.error().message;
  // Each header is within budget on its own; the total is not: 1 + 20 * (1 + 10) values.
  auto nested = Unpack(Pack(Value(Array(20, Value(Array(10))))), limits);
  ASSERT_FALSE(nested.ok());
  EXPECT_EQ(nested.error().code, ErrorCode::kResourceExhausted);
  // A map entry is two values: 1 + 2 * 49 fits, 1 + 2 * 50 does not.
  Map map;
  for (int i = 0; i < 50; ++i) map.emplace_back(Value(i), Value());
  EXPECT_FALSE(Unpack(Pack(Value(map)), limits).ok());
  map.pop_back();
  EXPECT_TRUE(Unpack(Pack(Value(map)), limits).ok());
  // Streaming decodes are held to the same budget.
  std::size_t consumed = 0;
  auto streamed = UnpackOne(Pack(Value(Array(20, Value(Array(10))))), &consumed, limits);
  ASSERT_FALSE(streamed.ok());
  EXPECT_EQ(streamed.error().code, ErrorCode::kResourceExhausted);
}

// The attack of issue 12: a 16 MiB array of nil (one wire byte, one 48-byte Value each). The
// old decoder reserved the declared 16 Mi elements and decoded them all (measured with the
// meter: peak 805,306,368 bytes, 48x, the document accepted). Now the header alone is over the
// budget.
TEST(MsgpackTest, SixteenMegabyteArrayOfNilIsRefusedWithoutAmplification) {
  constexpr std::uint32_t kCount = 16u << 20;
  const std::string doc = Array32Header(kCount) + std::string(kCount, '\xc0');
  testing_support::AllocationMeter meter;
  auto r = Unpack(doc);
  std::printf("peak %zu bytes for a %zu-byte document\n", meter.PeakBytes(), doc.size());
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code, ErrorCode::kResourceExhausted);
  EXPECT_LT(meter.PeakBytes(), 1u << 20);
}

// The same 16 MiB of nils as 65,535 honest arrays of 255: no header is over the budget, so the
// decoder really grows containers until the budget runs out. The peak stays within the bound
// UnpackLimits documents (3 * 48 bytes per node), not 48x the input. The old decoder accepted
// it, holding 16 Mi Values (measured peak 805,294,080 bytes; now 12.6 MB with 256 Ki nodes).
TEST(MsgpackTest, HonestLookingSixteenMegabyteDocumentStopsAtTheNodeBudget) {
  std::string doc = "\xdc\xff\xff";  // array16 of 65,535
  const std::string inner = std::string("\xdc\x00\xff", 3) + std::string(255, '\xc0');
  for (int i = 0; i < 0xffff; ++i) doc += inner;
  ASSERT_GT(doc.size(), 16000000u);
  UnpackLimits limits;
  limits.max_nodes = 1u << 18;
  testing_support::AllocationMeter meter;
  auto r = Unpack(doc, limits);
  std::printf("peak %zu bytes for a %zu-byte document\n", meter.PeakBytes(), doc.size());
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code, ErrorCode::kResourceExhausted);
  EXPECT_NE(r.error().message.find("values"), std::string::npos) << r.error().message;
  const std::size_t bound = 3 * sizeof(Value) * limits.max_nodes + (1u << 20);
  EXPECT_LT(meter.PeakBytes(), bound);
}

// Every level of a chain of array32 headers declares as many elements as bytes remain, so
// each passes the "count <= bytes left" check. The old decoder reserved 48 bytes per declared
// element at every level before failing: ~48 * 60 = 2,880x the input (measured peak
// 3,020,323,723 bytes for this 1 MiB document). Now each level reserves a small bound.
TEST(MsgpackTest, NestedOverstatedCountsDoNotMultiplyTheReserve) {
  constexpr std::size_t kLevels = 60;
  constexpr std::size_t kPayload = 1u << 20;
  std::string doc;
  for (std::size_t level = 0; level < kLevels; ++level) {
    const std::size_t remaining_after_header = (kLevels - level - 1) * 5 + kPayload;
    doc += Array32Header(static_cast<std::uint32_t>(remaining_after_header));
  }
  doc += std::string(kPayload, '\xc0');
  testing_support::AllocationMeter meter;
  auto r = Unpack(doc);
  std::printf("peak %zu bytes for a %zu-byte document\n", meter.PeakBytes(), doc.size());
  ASSERT_FALSE(r.ok());  // truncated or over budget, depending on where it stops
  EXPECT_LT(meter.PeakBytes(), 8 * doc.size() + (1u << 20));
}

TEST(MsgpackTest, DeepNestingIsRejected) {
  std::string deep(100000, '\x91');  // [[[[...
  deep.push_back('\xc0');
  auto r = Unpack(deep);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code, ErrorCode::kResourceExhausted);
  std::string ok_depth(10, '\x91');
  ok_depth.push_back('\xc0');
  EXPECT_TRUE(Unpack(ok_depth).ok());
}

TEST(MsgpackTest, InvalidTypeByteIsRejected) {
  auto r = Unpack("\xc1");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("0xc1"), std::string::npos);
}

TEST(MsgpackTest, OversizedDocumentIsRefused) {
  UnpackLimits limits;
  limits.max_bytes = 16;
  auto r = Unpack(Pack(Value(std::string(100, 'a'))), limits);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code, ErrorCode::kResourceExhausted);
}

TEST(MsgpackTest, UnpackOneStreamsDocumentsAndWaitsForMore) {
  std::string stream = Pack(Value::MapOf({{"head", Value::EmptyMap()}, {"body", Value::Bin("x")}}),
                            Packing::kBinType);
  std::string second = Pack(Value(42));
  stream += second;
  std::size_t consumed = 0;
  auto first = UnpackOne(stream, &consumed);
  ASSERT_TRUE(first.ok());
  ASSERT_TRUE(first->has_value());
  EXPECT_EQ(consumed, stream.size() - second.size());
  // A partial document is "need more", not an error.
  auto partial = UnpackOne(std::string_view(stream).substr(0, 3), &consumed);
  ASSERT_TRUE(partial.ok());
  EXPECT_FALSE(partial->has_value());
  EXPECT_EQ(consumed, 0u);
  auto bad = UnpackOne("\xc1", &consumed);
  EXPECT_FALSE(bad.ok());
}

TEST(MsgpackTest, TruthyFollowsPython) {
  EXPECT_FALSE(Value().Truthy());
  EXPECT_FALSE(Value(0).Truthy());
  EXPECT_FALSE(Value("").Truthy());
  EXPECT_FALSE(Value::EmptyMap().Truthy());
  EXPECT_TRUE(Value("x").Truthy());
  EXPECT_TRUE(Value(Array{Value()}).Truthy());
}

TEST(MsgpackTest, FloatsRenderInTheirShortestForm) {
  EXPECT_EQ(Value(3.428).ToJson(), "3.428");
  EXPECT_EQ(Value(2.0).ToJson(), "2.0");
  EXPECT_EQ(Value(0.1).ToJson(), "0.1");
}

TEST(MsgpackTest, JsonRenderingEscapesBytes) {
  Value v = Value::MapOf({{"a", Value::Bin(std::string("\xff\n", 2))}, {"b", 1.5}, {"c", Value()}});
  EXPECT_EQ(v.ToJson(), "{\"a\": \"\\u00ff\\n\", \"b\": 1.5, \"c\": null}");
}

TEST(MsgpackTest, ToJsonOfNestedContainerKeysStaysSmall) {
  // Found by msgpack_fuzz: 25 maps each keyed by the next took 540 MB before (the escapes of a
  // key rendered as JSON doubled at every level).
  Value v = Value::EmptyMap();
  for (int i = 0; i < 40; ++i) {
    Map m;
    m.emplace_back(std::move(v), Value());
    v = Value(std::move(m));
  }
  EXPECT_LT(v.ToJson().size(), 100u);
  Map scalar_key;
  scalar_key.emplace_back(Value(7), Value(true));
  EXPECT_EQ(Value(std::move(scalar_key)).ToJson(), "{\"7\": true}");
}

// KeyedMap builds exactly what Value::Set calls build (a key's value replaced where it stands,
// new keys appended, the first of repeated keys in the base being the one Set finds), from a
// base with repeats, non-string keys and bin keys; it exists so that n keys cost n, not n^2/2
// (docs/security.md, finding 14).
TEST(KeyedMapTest, BuildsWhatValueSetBuilds) {
  Map base;
  base.emplace_back(Value("a"), Value(1));
  base.emplace_back(Value(7), Value("seven"));
  base.emplace_back(Value("b"), Value(2));
  base.emplace_back(Value("a"), Value(3));  // a repeat: Set and Find see the first
  base.emplace_back(Value::Bin("c"), Value(4));
  Value by_set(base);
  KeyedMap keyed(base);
  std::uint32_t seed = 12345;
  for (int i = 0; i < 2000; ++i) {
    seed = seed * 1103515245u + 12345u;
    const std::string key = std::string(1, static_cast<char>('a' + (seed >> 16) % 6)) +
                            ((seed >> 8) % 3 ? "" : std::to_string((seed >> 4) % 50));
    by_set.Set(key, Value(i));
    keyed.Set(key, Value(i));
    ASSERT_EQ(keyed.Find(key) ? *keyed.Find(key) : Value(), *by_set.Find(key)) << key;
  }
  EXPECT_EQ(keyed.Find("zz"), nullptr);
  EXPECT_EQ(keyed.size(), by_set.map()->size());
  EXPECT_EQ(Value(std::move(keyed).Take()), by_set);
  // Many distinct keys: appended in order, each once.
  KeyedMap many;
  for (int i = 0; i < 100000; ++i) many.Set("k" + std::to_string(i), Value(i));
  many.Set("k5", Value("again"));
  const Map built = std::move(many).Take();
  ASSERT_EQ(built.size(), 100000u);
  EXPECT_EQ(built[5].second, Value("again"));
  EXPECT_EQ(built[99999].first, Value("k99999"));
}

}  // namespace
}  // namespace halite::wire
