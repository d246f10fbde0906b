// include/halite/wire/keyed_map.h
#include "halite/wire/keyed_map.h"

#include <utility>

namespace halite::wire {

KeyedMap::KeyedMap(Map base) : map_(std::move(base)) {
  index_.reserve(map_.size());
  for (std::size_t i = 0; i < map_.size(); ++i) {
    if (const std::string* k = map_[i].first.str()) index_.try_emplace(*k, i);
  }
}

void KeyedMap::Set(std::string_view key, Value value) {
  if (auto it = index_.find(key); it != index_.end()) {
    map_[it->second].second = std::move(value);
    return;
  }
  index_.emplace(std::string(key), map_.size());
  map_.emplace_back(Value(key), std::move(value));
}

const Value* KeyedMap::Find(std::string_view key) const {
  auto it = index_.find(key);
  return it == index_.end() ? nullptr : &map_[it->second].second;
}

Value* KeyedMap::Find(std::string_view key) {
  return const_cast<Value*>(static_cast<const KeyedMap*>(this)->Find(key));
}

}  // namespace halite::wire
