// salt-cp for halite-cp (include/halite/client/salt_cp.h).
#include "halite/client/salt_cp.h"

#include <sys/stat.h>

#include <algorithm>
#include <charconv>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>

#include "halite/client/output.h"
#include "halite/wire/encoding.h"
#include "halite/wire/gzip.h"

namespace halite::client {

namespace {

namespace fs = std::filesystem;

// Python's os.path.join(a, b) for a relative b.
std::string PyJoin(const std::string& a, const std::string& b) {
  if (a.empty() || a.back() == '/') return a + b;
  return a + "/" + b;
}

std::string Basename(const std::string& path) {
  std::size_t slash = path.find_last_of('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

const std::map<std::string, std::string>& TargetOptions() {
  static const std::map<std::string, std::string> kTypes = {
      {"-E", "pcre"},
      {"--pcre", "pcre"},
      {"-L", "list"},
      {"--list", "list"},
      {"-G", "grain"},
      {"--grain", "grain"},
      {"-P", "grain_pcre"},
      {"--grain-pcre", "grain_pcre"},
      {"-N", "nodegroup"},
      {"--nodegroup", "nodegroup"},
      {"--compound", "compound"},
      {"-I", "pillar"},
      {"--pillar", "pillar"},
      {"-J", "pillar_pcre"},
      {"--pillar-pcre", "pillar_pcre"},
      {"-S", "ipcidr"},
      {"--ipcidr", "ipcidr"},
  };
  return kTypes;
}

// salt -L: commas, else whitespace, split the list.
wire::Value ListTarget(const std::string& text) {
  wire::Array ids;
  const char sep = text.find(',') != std::string::npos ? ',' : ' ';
  std::size_t start = 0;
  while (start <= text.size()) {
    std::size_t end = text.find(sep, start);
    if (end == std::string::npos) end = text.size();
    if (end > start) ids.emplace_back(text.substr(start, end - start));
    start = end + 1;
  }
  return wire::Value(std::move(ids));
}

Status Recurse(const std::string& path, std::map<std::string, std::int64_t>& files,
               std::set<std::string>& empty_dirs) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return Error::NotFound(path + " does not exist");
  if (!S_ISDIR(st.st_mode)) {
    files[path] = st.st_mode & 07777;
    return OkStatus();
  }
  std::error_code ec;
  bool any = false;
  for (const auto& entry : fs::directory_iterator(path, ec)) {
    any = true;
    HALITE_RETURN_IF_ERROR(Recurse(entry.path().string(), files, empty_dirs));
  }
  if (ec) return Error::Unavailable(path + ": " + ec.message());
  if (!any) empty_dirs.insert(path);
  return OkStatus();
}

Result<std::string> ReadChunk(std::ifstream& in, std::size_t size) {
  std::string chunk(size, '\0');
  in.read(chunk.data(), static_cast<std::streamsize>(size));
  if (in.bad()) return Error::Unavailable("read failed");
  chunk.resize(static_cast<std::size_t>(in.gcount()));
  return chunk;
}

// One cp.recv_chunked job; the returns by minion (missing minions left out, as local.cmd).
Result<std::map<std::string, wire::Value>> SendChunk(const SaltCpCommandLine& cmd,
                                                     SaltCpContext& ctx, wire::Array arg) {
  PublishRequest request;
  request.tgt = cmd.tgt;
  request.tgt_type = cmd.tgt_type;
  request.fun = wire::Value("cp.recv_chunked");
  request.arg = std::move(arg);
  request.timeout = ctx.timeout;
  HALITE_ASSIGN_OR_RETURN(PublishReply job, ctx.client.Publish(request));
  std::map<std::string, wire::Value> returns;
  WaitOptions wait;
  wait.timeout = ctx.timeout;
  HALITE_ASSIGN_OR_RETURN(
      std::vector<std::string> missing,
      ctx.client.WaitForReturns(job, wait, [&](const MinionReturn& r) { returns[r.id] = r.ret; }));
  (void)missing;
  return returns;
}

}  // namespace

Result<SaltCpCommandLine> ParseSaltCpCommandLine(const std::vector<std::string>& words) {
  SaltCpCommandLine cmd;
  std::vector<std::string> positional;
  std::string list_type;
  bool options_done = false;
  for (std::size_t i = 0; i < words.size(); ++i) {
    std::string word = words[i];
    if (options_done || word.size() < 2 || word[0] != '-') {
      positional.push_back(word);
      continue;
    }
    if (word == "--") {
      options_done = true;
      continue;
    }
    std::optional<std::string> inline_value;
    if (word.rfind("--", 0) == 0 && word.find('=') != std::string::npos) {
      inline_value = word.substr(word.find('=') + 1);
      word = word.substr(0, word.find('='));
    } else if (word.rfind("--", 0) != 0 && word.size() > 2 && (word[1] == 't' || word[1] == 'c')) {
      inline_value = word.substr(2);  // -t5, -c/etc/halite
      word = word.substr(0, 2);
    }
    auto value = [&]() -> Result<std::string> {
      if (inline_value) return *inline_value;
      if (i + 1 >= words.size())
        return Error::InvalidArgument(word + " option requires 1 argument");
      return words[++i];
    };
    if (word == "-h" || word == "--help") {
      cmd.help = true;
    } else if (word == "--version") {
      cmd.version = true;
    } else if (word == "-C" || word == "--chunked") {
      cmd.chunked = true;
    } else if (word == "-n" || word == "--no-compression") {
      cmd.gzip = false;
    } else if (word == "--no-color" || word == "--no-colour") {
      cmd.no_color = true;
    } else if (word == "-c" || word == "--config-dir" || word == "--config") {
      HALITE_ASSIGN_OR_RETURN(cmd.config_path, value());
    } else if (word == "--out" || word == "--output") {
      HALITE_ASSIGN_OR_RETURN(cmd.out, value());
    } else if (word == "-l" || word == "--log-level" || word == "--log-file") {
      HALITE_ASSIGN_OR_RETURN(std::string ignored, value());  // the CLI logs nothing
      (void)ignored;
    } else if (word == "-t" || word == "--timeout") {
      HALITE_ASSIGN_OR_RETURN(std::string text, value());
      int seconds = 0;
      auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), seconds);
      if (ec != std::errc() || end != text.data() + text.size()) {
        return Error::InvalidArgument("option -t: invalid integer value: '" + text + "'");
      }
      cmd.timeout = seconds;
    } else if (auto t = TargetOptions().find(word); t != TargetOptions().end()) {
      if (!list_type.empty() && list_type != t->second) {
        return Error::InvalidArgument("target options " + list_type + " and " + t->second +
                                      " are mutually exclusive");
      }
      list_type = t->second;
      cmd.tgt_type = t->second;
    } else {
      return Error::InvalidArgument("no such option: " + word);
    }
  }
  if (cmd.help || cmd.version) return cmd;
  if (positional.size() < 3) return Error::FailedPrecondition("Insufficient arguments");
  cmd.tgt = cmd.tgt_type == "list" ? ListTarget(positional[0]) : wire::Value(positional[0]);
  std::error_code ec;
  for (std::size_t i = 1; i + 1 < positional.size(); ++i) {
    // Salt takes os.path.realpath of each source.
    fs::path real = fs::weakly_canonical(fs::absolute(positional[i]), ec);
    cmd.sources.push_back(ec ? positional[i] : real.string());
  }
  cmd.dest = positional.back();
  return cmd;
}

Result<CpPlan> PlanCopy(const std::vector<std::string>& sources, const std::string& dest) {
  std::map<std::string, std::int64_t> files;
  std::set<std::string> empty_dirs;
  for (const auto& src : sources) HALITE_RETURN_IF_ERROR(Recurse(src, files, empty_dirs));
  const bool dest_is_dir =
      !empty_dirs.empty() || files.size() > 1 || (!dest.empty() && dest.back() == '/');
  auto remote = [&](const std::string& path) -> std::string {
    if (std::find(sources.begin(), sources.end(), path) != sources.end()) {
      return dest_is_dir ? PyJoin(dest, Basename(path)) : dest;
    }
    for (const auto& src : sources) {
      const std::string prefix = src + "/";
      if (path.rfind(prefix, 0) != 0) continue;
      return PyJoin(PyJoin(dest, Basename(src)), path.substr(prefix.size()));
    }
    return PyJoin(dest, Basename(path));  // not reached: every path comes from a source
  };
  CpPlan plan;
  for (const auto& [path, mode] : files) plan.files.push_back({path, remote(path), mode});
  for (const auto& dir : empty_dirs) plan.remote_dirs.push_back(remote(dir));
  return plan;
}

int RunSaltCp(const SaltCpCommandLine& cmd, SaltCpContext& ctx) {
  auto plan = PlanCopy(cmd.sources, cmd.dest);
  if (!plan.ok()) {
    ctx.err << plan.error().message << "\n";
    return plan.error().code == ErrorCode::kNotFound ? 42 : 1;
  }
  auto format = ParseOutputFormat(cmd.out.empty() ? "nested" : cmd.out);
  if (!format.ok()) {
    ctx.err << "halite-cp: " << format.error().message << "\n";
    return 64;
  }
  if (auto st = ctx.client.SubscribeEvents(); !st.ok()) {
    ctx.err << "halite-cp: " << st.error().message << "\n";
    return 3;
  }
  std::map<std::string, wire::Value> ret;  // minion -> {remote path: result}
  auto record = [&](const std::string& id, const std::string& path, const wire::Value& value) {
    auto [it, added] = ret.try_emplace(id, wire::Value::EmptyMap());
    it->second.Set(path, value);
  };
  for (const CpPlan::File& file : plan->files) {
    std::ifstream in(file.local, std::ios::binary);
    if (!in) {
      ctx.err << "halite-cp: cannot read " << file.local << "\n";
      return 1;
    }
    std::map<std::string, wire::Value> failed;  // each minion's first error for this file
    for (std::size_t index = 1;; ++index) {
      auto chunk = ReadChunk(in, ctx.chunk_size);
      if (!chunk.ok()) {
        ctx.err << "halite-cp: " << file.local << ": " << chunk.error().message << "\n";
        return 1;
      }
      if (chunk->empty() && index > 1) break;
      std::string payload = *chunk;
      if (cmd.gzip) {
        auto packed = wire::GzipCompress(payload);
        if (!packed.ok()) {
          ctx.err << "halite-cp: " << packed.error().message << "\n";
          return 1;
        }
        payload = std::move(*packed);
      }
      // salt-cp sends these positionally, the chunk as bytes; halite's publisher packs bytes
      // as str, and a base64 str ending in one '=' (a small file) reads as key=value to a
      // minion. As keyword arguments they reach every minion intact.
      wire::Array arg{wire::Value(file.remote),
                      wire::Value::MapOf({{"__kwarg__", true},
                                          {"chunk", wire::Base64Encode(payload)},
                                          {"append", index > 1},
                                          {"compressed", cmd.gzip},
                                          {"mode", file.mode}})};
      auto returns = SendChunk(cmd, ctx, std::move(arg));
      if (!returns.ok()) {
        if (returns.error().code == ErrorCode::kNotFound) {
          ctx.out << "No minions matched the target. No command was sent, no jid was assigned.\n";
          return 2;
        }
        ctx.err << "halite-cp: " << returns.error().message << "\n";
        return 3;
      }
      for (const auto& [id, value] : *returns) {
        record(id, file.remote, value);
        if (!(value.is_bool() && *value.boolean()) && !failed.contains(id)) failed[id] = value;
      }
      if (chunk->size() < ctx.chunk_size) break;
    }
    for (const auto& [id, value] : failed) record(id, file.remote, value);
  }
  for (const std::string& dir : plan->remote_dirs) {
    auto returns = SendChunk(cmd, ctx, {wire::Value(dir), wire::Value()});
    if (!returns.ok()) {
      ctx.err << "halite-cp: " << returns.error().message << "\n";
      return returns.error().code == ErrorCode::kNotFound ? 2 : 3;
    }
    for (const auto& [id, value] : *returns) record(id, dir, value);
  }
  wire::Map by_id;  // a std::map's ids: distinct and sorted, appended without a search
  for (auto& [id, value] : ret) by_id.emplace_back(wire::Value(id), std::move(value));
  const wire::Value shown(std::move(by_id));
  OutputOptions options;
  options.color = !cmd.no_color && ctx.out_is_terminal;
  ctx.out << DisplayOutput(shown, *format, options) << std::flush;
  return 0;
}

}  // namespace halite::client
