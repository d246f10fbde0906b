// Target expressions: MatchTarget over every tgt type against a fixed grains map (also used
// as the pillar) and a few nodegroups.
// Input: byte 0 picks the type, byte 1 the options (bit 0 greedy, bit 1 grains unknown, bit 2
// a list target as an array, bit 3 delimiter ",", bit 4 pillar unknown,
// bit 5 no nodegroups, bit 6 a compound as compound_pillar_exact), then
// "<minion id>\n<expression>".
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "halite/wire/msgpack.h"
#include "halite/wire/target.h"

namespace wire = halite::wire;

namespace {

constexpr std::string_view kTypes[] = {"glob",        "pcre",         "list",   "grain",
                                       "grain_pcre",  "compound",     "",       "nodegroup",
                                       "pillar_pcre", "pillar_exact", "ipcidr", "pillar"};

const wire::Nodegroups& Groups() {
  static const wire::Nodegroups groups{{"web", {"web*"}},
                                       {"dbs", {"db1", "db[2]"}},
                                       {"both", {"N@web", "or", "N@dbs", "and", "G@os:Debian"}},
                                       {"loop", {"N@loop"}}};
  return groups;
}

const wire::Value& Grains() {
  static const wire::Value grains = wire::Value::MapOf({
      {"id", "web1.example.com"},
      {"os", "Debian"},
      {"os_family", "Debian"},
      {"osrelease", "12"},
      {"kernel", "Linux"},
      {"num_cpus", 2},
      {"mem_total", 3928},
      {"virtual", true},
      {"empty", ""},
      {"none", nullptr},
      {"roles", wire::Value(wire::Array{"web", "db", "salt:master"})},
      {"ipv4", wire::Value(wire::Array{"127.0.0.1", "10.0.0.5"})},
      {"nested", wire::Value::MapOf({{"a", wire::Value::MapOf({{"b", "c"}, {"n", 7}})},
                                     {"list", wire::Value(wire::Array{1, "two", nullptr})}})},
  });
  return grains;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size < 2) return 0;
  const std::uint8_t options = data[1];
  std::string_view type = kTypes[data[0] % std::size(kTypes)];
  if (type == "compound" && (options & 64)) type = "compound_pillar_exact";
  std::string_view rest(reinterpret_cast<const char*>(data) + 2, size - 2);
  std::string_view id = "web1.example.com";
  if (std::size_t nl = rest.find('\n'); nl != std::string_view::npos) {
    id = rest.substr(0, nl);
    rest.remove_prefix(nl + 1);
  }

  wire::Value tgt{rest};
  if (type == "list" && (options & 4)) {
    wire::Array items;
    for (const std::string& item : wire::TargetListItems(tgt)) items.emplace_back(item);
    tgt = wire::Value(std::move(items));
  }
  wire::TargetContext ctx;
  ctx.id = id;
  ctx.grains = (options & 2) ? nullptr : &Grains();
  ctx.greedy = (options & 1) != 0;
  ctx.delimiter = (options & 8) ? "," : ":";
  ctx.pillar = (options & 16) ? nullptr : &Grains();
  ctx.nodegroups = (options & 32) ? nullptr : &Groups();
  // A twentieth of the master's budget: the same code, cut sooner. With the full budget a
  // grown corpus of inputs that spend it all ran at 24 executions/s (2026-12-06); the data
  // here is 20 entries, which real targets match in tens of units.
  ctx.subdict_work_budget = wire::kSubdictWorkBudget / 20;
  (void)wire::MatchTarget(tgt, type, ctx);
  (void)wire::GlobMatch(rest, id);
  return 0;
}
