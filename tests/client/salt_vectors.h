// Known answers from stock Salt 3007.8 (tests/data/salt/gen_cli_vectors.py) and their JSON
// values as wire::Value.
#pragma once

#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include "halite/wire/msgpack.h"

namespace halite::client {

inline nlohmann::json SaltCliVectors() {
  std::ifstream in(std::string(HALITE_TEST_DATA_DIR) + "/salt/cli_vectors.json");
  return nlohmann::json::parse(in);
}

// {"__float__": "nan"|"inf"|"-inf"} stands for the floats JSON cannot hold, and
// {"__map__": [[key, value], ...]} for a map whose keys are not all strings.
inline wire::Value FromJson(const nlohmann::json& j) {
  if (j.is_object() && j.contains("__float__")) {
    const std::string f = j["__float__"];
    if (f == "nan") return wire::Value(std::numeric_limits<double>::quiet_NaN());
    return wire::Value((f == "inf" ? 1 : -1) * std::numeric_limits<double>::infinity());
  }
  if (j.is_object() && j.contains("__map__")) {  // keys that are not strings, in Salt's order
    wire::Map m;
    for (const auto& kv : j["__map__"]) m.emplace_back(FromJson(kv[0]), FromJson(kv[1]));
    return wire::Value(std::move(m));
  }
  if (j.is_object()) {
    wire::Map m;
    for (const auto& [k, v] : j.items()) m.emplace_back(wire::Value(k), FromJson(v));
    return wire::Value(std::move(m));
  }
  if (j.is_array()) {
    wire::Array a;
    for (const auto& v : j) a.push_back(FromJson(v));
    return wire::Value(std::move(a));
  }
  if (j.is_string()) return wire::Value(j.get<std::string>());
  if (j.is_boolean()) return wire::Value(j.get<bool>());
  if (j.is_number_unsigned()) return wire::Value(j.get<std::uint64_t>());
  if (j.is_number_integer()) return wire::Value(j.get<std::int64_t>());
  if (j.is_number_float()) return wire::Value(j.get<double>());
  return wire::Value();
}

// Equality where NaN equals NaN and maps compare without regard to key order (Python dicts
// from json.dump are sorted; Salt's own order is insertion order).
inline bool SameValue(const wire::Value& a, const wire::Value& b) {
  if (a.is_float() && b.is_float() && std::isnan(*a.float64()) && std::isnan(*b.float64())) {
    return true;
  }
  if (a.is_map() && b.is_map()) {
    if (a.map()->size() != b.map()->size()) return false;
    for (const auto& [k, v] : *a.map()) {
      const wire::Value* other = nullptr;
      for (const auto& [k2, v2] : *b.map()) {
        if (SameValue(k2, k)) other = &v2;
      }
      if (other == nullptr || !SameValue(v, *other)) return false;
    }
    return true;
  }
  if (a.is_array() && b.is_array()) {
    if (a.array()->size() != b.array()->size()) return false;
    for (std::size_t i = 0; i < a.array()->size(); ++i) {
      if (!SameValue((*a.array())[i], (*b.array())[i])) return false;
    }
    return true;
  }
  if (a.is_int() && b.is_int()) return a.int64() == b.int64() && a.uint64() == b.uint64();
  return a == b;
}

}  // namespace halite::client
