// A map built the way repeated Value::Set calls build one, in time linear in the keys.
#pragma once

#include <cstddef>
#include <functional>
#include <string>
#include <string_view>
#include <unordered_map>

#include "halite/wire/msgpack.h"

namespace halite::wire {

// A key already there has its value replaced where it stands; a new key is appended; keys are
// compared as byte strings (as Value::Set and Find do). Value::Set searches the whole map each
// time, so n keys from a peer cost n^2/2 comparisons: one minion's `_mine` of 20,000 keys held
// a master worker past 10 s (docs/security.md, finding 14). Use this wherever the keys come
// from someone else. Not thread-safe.
class KeyedMap {
 public:
  KeyedMap() = default;
  // Indexes `base`'s string keys (the first of a repeated key, as Value::Find finds it).
  explicit KeyedMap(Map base);
  void Set(std::string_view key, Value value);
  Value* Find(std::string_view key);
  const Value* Find(std::string_view key) const;
  std::size_t size() const { return map_.size(); }
  Map Take() && { return std::move(map_); }

 private:
  struct Hash {
    using is_transparent = void;
    std::size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
  };
  Map map_;
  std::unordered_map<std::string, std::size_t, Hash, std::equal_to<>> index_;
};

}  // namespace halite::wire
