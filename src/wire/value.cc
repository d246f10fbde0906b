// wire::Value: construction, typed access and map lookups (the document model the msgpack
// codec in msgpack.cc reads and writes).
#include <algorithm>
#include <limits>

#include "halite/wire/msgpack.h"

namespace halite::wire {

Value::Value(unsigned long i) {  // NOLINT(google-runtime-int)
  if (i <= static_cast<unsigned long>(std::numeric_limits<std::int64_t>::max())) {
    v_ = static_cast<std::int64_t>(i);
  } else {
    v_ = static_cast<std::uint64_t>(i);
  }
}

Value::Value(unsigned long long i) {  // NOLINT(google-runtime-int)
  if (i <= static_cast<unsigned long long>(std::numeric_limits<std::int64_t>::max())) {
    v_ = static_cast<std::int64_t>(i);
  } else {
    v_ = static_cast<std::uint64_t>(i);
  }
}

Value Value::MapOf(std::initializer_list<std::pair<std::string_view, Value>> items) {
  Map m;
  m.reserve(items.size());
  for (const auto& [k, v] : items) m.emplace_back(Value(k), v);
  return Value(std::move(m));
}

const std::string* Value::str() const {
  const Str* s = std::get_if<Str>(&v_);
  return s ? &s->bytes : nullptr;
}
std::string* Value::str() {
  Str* s = std::get_if<Str>(&v_);
  return s ? &s->bytes : nullptr;
}
const Array* Value::array() const { return std::get_if<Array>(&v_); }
Array* Value::array() { return std::get_if<Array>(&v_); }
const Map* Value::map() const { return std::get_if<Map>(&v_); }
Map* Value::map() { return std::get_if<Map>(&v_); }
const Ext* Value::ext() const { return std::get_if<Ext>(&v_); }

std::optional<bool> Value::boolean() const {
  if (const bool* b = std::get_if<bool>(&v_)) return *b;
  return std::nullopt;
}

std::optional<std::int64_t> Value::int64() const {
  if (const auto* i = std::get_if<std::int64_t>(&v_)) return *i;
  return std::nullopt;  // uint64 values here are all > INT64_MAX by construction
}

std::optional<std::uint64_t> Value::uint64() const {
  if (const auto* i = std::get_if<std::int64_t>(&v_)) {
    if (*i < 0) return std::nullopt;
    return static_cast<std::uint64_t>(*i);
  }
  if (const auto* u = std::get_if<std::uint64_t>(&v_)) return *u;
  return std::nullopt;
}

std::optional<double> Value::float64() const {
  if (const auto* d = std::get_if<double>(&v_)) return *d;
  if (const auto* i = std::get_if<std::int64_t>(&v_)) return static_cast<double>(*i);
  if (const auto* u = std::get_if<std::uint64_t>(&v_)) return static_cast<double>(*u);
  return std::nullopt;
}

bool Value::is_binary_str() const {
  const Str* s = std::get_if<Str>(&v_);
  return s && s->binary;
}

bool Value::Truthy() const {
  return std::visit(
      [](const auto& x) -> bool {
        using T = std::decay_t<decltype(x)>;
        if constexpr (std::is_same_v<T, Nil>) {
          return false;
        } else if constexpr (std::is_same_v<T, bool>) {
          return x;
        } else if constexpr (std::is_same_v<T, std::int64_t> || std::is_same_v<T, std::uint64_t> ||
                             std::is_same_v<T, double>) {
          return x != 0;
        } else if constexpr (std::is_same_v<T, Str>) {
          return !x.bytes.empty();
        } else if constexpr (std::is_same_v<T, Array> || std::is_same_v<T, Map>) {
          return !x.empty();
        } else {
          return true;
        }
      },
      v_);
}

const Value* Value::Find(std::string_view key) const {
  const Map* m = map();
  if (!m) return nullptr;
  for (const auto& [k, v] : *m) {
    const std::string* ks = k.str();
    if (ks && *ks == key) return &v;
  }
  return nullptr;
}

Value* Value::Find(std::string_view key) {
  return const_cast<Value*>(static_cast<const Value*>(this)->Find(key));
}

const std::string* Value::FindStr(std::string_view key) const {
  const Value* v = Find(key);
  return v ? v->str() : nullptr;
}

void Value::Set(std::string_view key, Value value) {
  if (!is_map()) v_ = Map{};
  if (Value* existing = Find(key)) {
    *existing = std::move(value);
    return;
  }
  std::get<Map>(v_).emplace_back(Value(key), std::move(value));
}

bool Value::Erase(std::string_view key) {
  Map* m = map();
  if (!m) return false;
  for (auto it = m->begin(); it != m->end(); ++it) {
    const std::string* ks = it->first.str();
    if (ks && *ks == key) {
      m->erase(it);
      return true;
    }
  }
  return false;
}

}  // namespace halite::wire
