// msgpack with Salt's rules (salt-wire.md 3.1).
//
// - str and bin decode to one byte-string type (Value::Str); no UTF-8 validation. The
//   `binary` flag remembers which family it came from / should be packed as under kBinType.
// - Packing::kWire is salt.payload.dumps (use_bin_type=False): every string is packed in the
//   raw family and str8 (0xd9) is never emitted. Packing::kBinType is the event-bus/job-cache
//   file form (use_bin_type=True): text as str (str8 allowed), binary as bin.
// - Ext types (78 datetime, 79 Salt constant, any other) pass through unchanged.
// - Map key order is kept (a map is a vector of pairs).
// - Unpack rejects truncated input, trailing bytes, nesting beyond a depth limit, declared
//   lengths larger than the bytes that remain and documents of more than `max_nodes` values.
//   Containers grow with the elements actually decoded (a declared count reserves at most a
//   small bound), so memory stays bounded by the input size and the node budget.
// Thread-safety: values are plain data; functions are reentrant.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

#include "halite/common/result.h"

namespace halite::wire {

class Value;
using Array = std::vector<Value>;
using Map = std::vector<std::pair<Value, Value>>;

struct Str {
  std::string bytes;
  bool binary = false;  // packed as bin under Packing::kBinType
  bool operator==(const Str& o) const { return bytes == o.bytes; }
};

struct Ext {
  std::int8_t type = 0;
  std::string data;
  bool operator==(const Ext& o) const = default;
};

struct Nil {
  bool operator==(const Nil&) const = default;
};

class Value {
 public:
  Value() : v_(Nil{}) {}
  Value(std::nullptr_t) : v_(Nil{}) {}                           // NOLINT: implicit
  Value(bool b) : v_(b) {}                                       // NOLINT: implicit
  Value(int i) : v_(static_cast<std::int64_t>(i)) {}             // NOLINT: implicit
  Value(long i) : v_(static_cast<std::int64_t>(i)) {}            // NOLINT: implicit
  Value(long long i) : v_(static_cast<std::int64_t>(i)) {}       // NOLINT: implicit
  Value(unsigned i) : v_(static_cast<std::int64_t>(i)) {}        // NOLINT: implicit
  Value(unsigned long i);                                        // NOLINT: implicit
  Value(unsigned long long i);                                   // NOLINT: implicit
  Value(double d) : v_(d) {}                                     // NOLINT: implicit
  Value(const char* s) : v_(Str{s, false}) {}                    // NOLINT: implicit
  Value(std::string s) : v_(Str{std::move(s), false}) {}         // NOLINT: implicit
  Value(std::string_view s) : v_(Str{std::string(s), false}) {}  // NOLINT: implicit
  Value(Str s) : v_(std::move(s)) {}                             // NOLINT: implicit
  Value(Array a) : v_(std::move(a)) {}                           // NOLINT: implicit
  Value(Map m) : v_(std::move(m)) {}                             // NOLINT: implicit
  Value(Ext e) : v_(std::move(e)) {}                             // NOLINT: implicit

  static Value Bin(std::string bytes) { return Value(Str{std::move(bytes), true}); }
  static Value EmptyMap() { return Value(Map{}); }
  static Value EmptyArray() { return Value(Array{}); }
  // {"k1", v1, "k2", v2} style construction, keeping order.
  static Value MapOf(std::initializer_list<std::pair<std::string_view, Value>> items);

  bool is_nil() const { return std::holds_alternative<Nil>(v_); }
  bool is_bool() const { return std::holds_alternative<bool>(v_); }
  bool is_int() const {
    return std::holds_alternative<std::int64_t>(v_) || std::holds_alternative<std::uint64_t>(v_);
  }
  bool is_float() const { return std::holds_alternative<double>(v_); }
  bool is_str() const { return std::holds_alternative<Str>(v_); }
  bool is_array() const { return std::holds_alternative<Array>(v_); }
  bool is_map() const { return std::holds_alternative<Map>(v_); }
  bool is_ext() const { return std::holds_alternative<Ext>(v_); }

  // Checked accessors: nullptr / nullopt when the type differs.
  const std::string* str() const;  // the bytes of a str or bin
  std::string* str();
  const Array* array() const;
  Array* array();
  const Map* map() const;
  Map* map();
  const Ext* ext() const;
  std::optional<bool> boolean() const;
  std::optional<std::int64_t> int64() const;    // nullopt for uint64 above INT64_MAX
  std::optional<std::uint64_t> uint64() const;  // nullopt for negatives
  std::optional<double> float64() const;        // ints convert too
  bool is_binary_str() const;

  // Truthiness in Python's sense: nil/false/0/""/[]/{} are false.
  bool Truthy() const;

  // Map helpers (keys compared as byte strings). Find returns nullptr when this is not a map
  // or has no such key. Set replaces an existing key in place or appends. Erase returns
  // whether a key was removed.
  const Value* Find(std::string_view key) const;
  Value* Find(std::string_view key);
  // Find + str(): nullptr unless the key exists and holds a string.
  const std::string* FindStr(std::string_view key) const;
  void Set(std::string_view key, Value value);
  bool Erase(std::string_view key);

  // Debug/CLI rendering as JSON (bytes that are not valid UTF-8 are \u-escaped byte by byte).
  std::string ToJson() const;

  bool operator==(const Value& other) const { return v_ == other.v_; }

  using Variant =
      std::variant<Nil, bool, std::int64_t, std::uint64_t, double, Str, Array, Map, Ext>;
  const Variant& variant() const { return v_; }

 private:
  Variant v_;
};

enum class Packing {
  kWire,     // salt.payload.dumps: use_bin_type=False, never str8, never bin
  kBinType,  // IPC / file: use_bin_type=True
};

std::string Pack(const Value& value, Packing packing = Packing::kWire);
void PackTo(const Value& value, Packing packing, std::string& out);
// At least Pack(value, any packing).size(), without packing: for budgets of queued values.
std::size_t PackedSizeBound(const Value& value);

struct UnpackLimits {
  std::size_t max_depth = 64;
  std::size_t max_bytes = 256u << 20;  // input larger than this is refused outright
  // Budget on the number of Values (every scalar, container, map key and map value counts
  // one) in one document. A Value is 48 bytes and a container holds at most twice the
  // capacity it uses, and while it grows the old and the new buffer live at once, so a decode
  // holds at most about 3 * 48 * max_nodes bytes of nodes (144 MiB for the default 1 Mi nodes)
  // plus the string and ext bytes, which are at most the input's size. Callers that take
  // input from strangers should pass a smaller budget.
  std::size_t max_nodes = 1u << 20;
};

// Exactly one document; trailing bytes are an error. Errors are kInvalidArgument
// (malformed, truncated) or kResourceExhausted (depth, size, node budget). A container that
// declares more elements than the bytes left is truncated (kInvalidArgument) before it is
// over the node budget.
Result<Value> Unpack(std::string_view bytes, const UnpackLimits& limits = {});

// Streaming form: decodes one document from the front of `bytes`. Returns nullopt (and leaves
// *consumed at 0) when `bytes` holds an incomplete prefix of a valid document; an error for
// malformed input.
Result<std::optional<Value>> UnpackOne(std::string_view bytes, std::size_t* consumed,
                                       const UnpackLimits& limits = {});

}  // namespace halite::wire
