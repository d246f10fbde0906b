// YAML that costs far more than its bytes, for tests of every reader that takes YAML from
// others (config, salt-api bodies, CLI words).
#pragma once

#include <string>

namespace halite::testing {

// "Billion laughs": `levels` anchored lists, each of `width` aliases to the one before
// (a0 holds `width` scalars), so a walk visits about width^levels nodes. Nine levels of ten are
// about 500 bytes and 10^9 nodes.
inline std::string AliasBombYaml(int levels = 9, int width = 10) {
  std::string text = "a0: &a0 [";
  for (int j = 0; j < width; ++j) text += j ? ", x" : "x";
  text += "]\n";
  for (int i = 1; i < levels; ++i) {
    text += "a" + std::to_string(i) + ": &a" + std::to_string(i) + " [";
    for (int j = 0; j < width; ++j) text += (j ? ", *a" : "*a") + std::to_string(i - 1);
    text += "]\n";
  }
  return text;
}

}  // namespace halite::testing
