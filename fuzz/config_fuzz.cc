// Config YAML: ParseYaml, the master and minion config parsers (every validation path), and
// YamlMapReader's typed reads of the keys "a" to "i". Errors are values; nothing
// may throw out of config/ or crash.
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "halite/config/master_config.h"
#include "halite/config/minion_config.h"
#include "halite/config/yaml.h"

namespace config = halite::config;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  (void)config::ParseMasterConfig(text);
  (void)config::ParseMinionConfig(text);

  auto root = config::ParseYaml(text);
  if (!root.ok()) return 0;
  (void)config::DescribeYaml(*root);
  // Typed reads of keys "a".."i", one reader each.
  config::YamlMapReader reader(*root, "fuzz.");
  int which = 0;
  for (const auto& key : {"a", "b", "c", "d", "e", "f", "g", "h", "i"}) {
    switch (which++ % 9) {
      case 0: {
        std::string s;
        reader.ReadString(key, s);
        break;
      }
      case 1: {
        bool b = false;
        reader.ReadBool(key, b);
        break;
      }
      case 2: {
        int i = 0;
        reader.ReadInt(key, i, -1000, 1000);
        break;
      }
      case 3: {
        std::uint16_t port = 0;
        reader.ReadInt(key, port, 0, 65535);
        break;
      }
      case 4: {
        std::chrono::seconds s{0};
        reader.ReadDuration(key, s, 0, 86400);
        break;
      }
      case 5: {
        std::vector<std::string> list;
        reader.ReadStringList(key, list, true);
        break;
      }
      case 6: {
        std::map<std::string, std::vector<std::string>> roots;
        reader.ReadStringListMap(key, roots);
        break;
      }
      case 7: {
        YAML::Node node;
        reader.ReadMap(key, node);
        break;
      }
      default: {
        std::chrono::milliseconds ms{0};
        reader.ReadDuration(key, ms, -5, 1 << 30);
        break;
      }
    }
  }
  reader.WarnUnknownKeys();
  (void)reader.HasProblem("a");
  (void)config::FormatProblems(reader.problems());
  return 0;
}
