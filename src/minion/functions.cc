#include "halite/minion/functions.h"

#include <unistd.h>

#include <cctype>
#include <charconv>
#include <cmath>

#include "cp_recv.h"
#include "halite/minion/process.h"
#include "halite/version.h"
#include "halite/wire/target.h"

namespace halite::minion {
namespace {

using wire::Value;
using Clock = std::chrono::steady_clock;

// Salt's parse_kwarg: ^([^\d\W][\w.-]*)=(?!=)(.*)$ (ASCII word characters here).
bool SplitKwarg(const std::string& text, std::string& key, std::string& value) {
  auto word = [](unsigned char c) { return std::isalnum(c) || c == '_' || c >= 0x80; };
  if (text.empty() || !word(text[0]) || std::isdigit(static_cast<unsigned char>(text[0]))) {
    return false;
  }
  std::size_t i = 1;
  while (i < text.size() && (word(text[i]) || text[i] == '.' || text[i] == '-')) ++i;
  if (i >= text.size() || text[i] != '=') return false;
  if (i + 1 < text.size() && text[i + 1] == '=') return false;
  key = text.substr(0, i);
  value = text.substr(i + 1);
  return true;
}

FunctionResult Ok(Value ret) { return FunctionResult{JobResult{std::move(ret), 0, true, ""}, {}}; }

FunctionResult Fail(std::string message) {
  return FunctionResult{JobResult{Value(std::move(message)), 1, false, "nested"}, {}};
}

// The positional argument `index`, else kwargs[name], else nullptr.
const Value* Arg(const JobCall& call, std::size_t index, std::string_view name) {
  if (index < call.args.size()) return &call.args[index];
  return call.kwargs.Find(name);
}

std::optional<double> AsNumber(const Value& v) {
  if (auto d = v.float64()) return d;
  if (const std::string* s = v.str()) {
    double out = 0;
    auto [ptr, ec] = std::from_chars(s->data(), s->data() + s->size(), out);
    if (ec == std::errc() && ptr == s->data() + s->size()) return out;
  }
  return std::nullopt;
}

std::string AsText(const Value& v) {
  if (const std::string* s = v.str()) return *s;
  return wire::ScalarToString(v);
}

// Salt's traverse_dict: "a:b:c" through maps (and list indexes).
const Value* Traverse(const Value& root, std::string_view path, std::string_view delimiter) {
  const Value* node = &root;
  std::size_t start = 0;
  while (node != nullptr) {
    std::size_t end = path.find(delimiter, start);
    std::string_view key =
        path.substr(start, end == std::string_view::npos ? path.npos : end - start);
    if (const wire::Array* a = node->array()) {
      std::size_t index = 0;
      auto [ptr, ec] = std::from_chars(key.data(), key.data() + key.size(), index);
      node = (ec == std::errc() && ptr == key.data() + key.size() && index < a->size())
                 ? &(*a)[index]
                 : nullptr;
    } else {
      node = node->Find(key);
    }
    if (end == std::string_view::npos) break;
    start = end + delimiter.size();
  }
  return node;
}

Clock::time_point EarlierDeadline(Clock::time_point a, const Value* timeout_seconds,
                                  std::chrono::milliseconds* chosen) {
  auto now = Clock::now();
  if (a != Clock::time_point::max()) {
    *chosen = std::chrono::duration_cast<std::chrono::milliseconds>(a - now);
  }
  if (timeout_seconds != nullptr) {
    if (auto s = AsNumber(*timeout_seconds); s && *s > 0) {
      auto ms = std::chrono::milliseconds(static_cast<std::int64_t>(*s * 1000));
      if (now + ms < a) {
        *chosen = ms;
        return now + ms;
      }
    }
  }
  return a;
}

struct ShellRun {
  Result<ProcessResult> process;
  std::string command;
  std::chrono::milliseconds timeout{0};
};

std::optional<ShellRun> RunCommand(const JobCall& call, const JobContext& ctx, bool merge,
                                   FunctionResult* error) {
  const Value* cmd = Arg(call, 0, "cmd");
  if (cmd == nullptr || cmd->str() == nullptr || cmd->str()->empty()) {
    *error = Fail("Passed invalid arguments: cmd.run needs a command string");
    return std::nullopt;
  }
  ProcessOptions po;
  po.command = *cmd->str();
  if (const Value* cwd = call.kwargs.Find("cwd"); cwd && cwd->str()) po.cwd = *cwd->str();
  po.merge_stderr = merge;
  po.cancelled = ctx.cancelled;
  std::chrono::milliseconds timeout{0};
  po.deadline = EarlierDeadline(ctx.deadline, call.kwargs.Find("timeout"), &timeout);
  return ShellRun{RunShell(po), po.command, timeout};
}

FunctionResult CmdRun(const JobCall& call, const JobContext& ctx) {
  FunctionResult error;
  auto run = RunCommand(call, ctx, /*merge=*/true, &error);
  if (!run) return error;
  if (!run->process.ok()) return Fail(run->process.error().message);
  const ProcessResult& p = *run->process;
  if (p.timed_out) {
    return FunctionResult{TimedOut(run->command, run->timeout), {}};
  }
  JobResult r{Value(RStrip(p.stdout_text)), p.retcode, p.retcode == 0, ""};
  return FunctionResult{std::move(r), {}};
}

FunctionResult CmdRunAll(const JobCall& call, const JobContext& ctx) {
  FunctionResult error;
  auto run = RunCommand(call, ctx, /*merge=*/false, &error);
  if (!run) return error;
  if (!run->process.ok()) return Fail(run->process.error().message);
  const ProcessResult& p = *run->process;
  std::string out = RStrip(p.stdout_text);
  std::string err = RStrip(p.stderr_text);
  int retcode = p.retcode;
  if (p.timed_out) {
    out = AsText(TimedOut(run->command, run->timeout).ret);
    err.clear();
    retcode = 1;
  }
  Value ret = Value::MapOf({{"pid", static_cast<std::int64_t>(p.pid)},
                            {"retcode", retcode},
                            {"stdout", std::move(out)},
                            {"stderr", std::move(err)}});
  return FunctionResult{JobResult{std::move(ret), retcode, retcode == 0, ""}, {}};
}

FunctionResult TestSleep(const JobCall& call, const JobContext&) {
  const Value* length = Arg(call, 0, "length");
  auto seconds = length != nullptr ? AsNumber(*length) : std::nullopt;
  if (!seconds || *seconds < 0 || !std::isfinite(*seconds)) {
    return Fail("Passed invalid arguments: test.sleep needs a length in seconds");
  }
  FunctionResult r = Ok(true);
  r.delay = std::chrono::milliseconds(static_cast<std::int64_t>(std::trunc(*seconds) * 1000));
  return r;
}

FunctionResult TestArg(const JobCall& call, const JobContext&) {
  Value kwargs = Value::EmptyMap();
  for (const auto& [k, v] : *call.kwargs.map()) {
    const std::string* key = k.str();
    if (key != nullptr && key->rfind("__pub_", 0) == 0) continue;
    kwargs.map()->emplace_back(k, v);
  }
  return Ok(Value::MapOf({{"args", Value(call.args)}, {"kwargs", std::move(kwargs)}}));
}

FunctionResult GrainsItem(const JobCall& call, const JobContext& ctx) {
  Value out = Value::EmptyMap();
  for (const Value& name : call.args) {
    std::string key = AsText(name);
    const Value* v = ctx.grains != nullptr ? Traverse(*ctx.grains, key, ":") : nullptr;
    out.Set(key, v != nullptr ? *v : Value(""));
  }
  return Ok(std::move(out));
}

FunctionResult GrainsGet(const JobCall& call, const JobContext& ctx) {
  const Value* key = Arg(call, 0, "key");
  if (key == nullptr) return Fail("Passed invalid arguments: grains.get needs a key");
  const Value* fallback = Arg(call, 1, "default");
  const Value* delimiter = call.kwargs.Find("delimiter");
  std::string delim = delimiter && delimiter->str() ? *delimiter->str() : ":";
  const Value* v = ctx.grains != nullptr ? Traverse(*ctx.grains, AsText(*key), delim) : nullptr;
  if (v != nullptr) return Ok(*v);
  return Ok(fallback != nullptr ? *fallback : Value(""));
}

FunctionResult ListFunctions(const JobCall& call, const JobContext& ctx) {
  wire::Array out;
  if (ctx.functions == nullptr) return Ok(Value(std::move(out)));
  for (const std::string& name : ctx.functions->Names()) {
    bool keep = call.args.empty();
    for (const Value& a : call.args) {
      std::string pattern = AsText(a);
      if (pattern.find_first_of("*?[") != std::string::npos) {
        keep = keep || wire::GlobMatch(pattern, name);
      } else {
        keep = keep || name == pattern || name.rfind(pattern + ".", 0) == 0;
      }
    }
    if (keep) out.emplace_back(name);
  }
  return Ok(Value(std::move(out)));
}

FunctionResult FindJob(const JobCall& call, const JobContext& ctx) {
  const Value* jid = Arg(call, 0, "jid");
  if (jid == nullptr || !ctx.find_job) return Ok(Value::EmptyMap());
  return Ok(ctx.find_job(AsText(*jid)));
}

}  // namespace

JobCall ParseJobCall(std::string_view jid, std::string_view fun, const Value& arg) {
  JobCall call;
  call.jid = std::string(jid);
  call.fun = std::string(fun);
  call.kwargs = Value::EmptyMap();
  const wire::Array* list = arg.array();
  if (list == nullptr) {
    if (!arg.is_nil()) call.args.push_back(arg);
    return call;
  }
  for (const Value& item : *list) {
    if (const Value* marker = item.Find("__kwarg__"); marker != nullptr && marker->Truthy()) {
      for (const auto& [k, v] : *item.map()) {
        const std::string* key = k.str();
        if (key != nullptr && *key == "__kwarg__") continue;
        if (key != nullptr) call.kwargs.Set(*key, v);
      }
      continue;
    }
    std::string key, value;
    if (const std::string* text = item.str(); text != nullptr && SplitKwarg(*text, key, value)) {
      call.kwargs.Set(key, std::move(value));
      continue;
    }
    call.args.push_back(item);
  }
  return call;
}

void FunctionTable::Add(std::string name, RunOn run_on, Function fn) {
  entries_.insert_or_assign(std::move(name), Entry{run_on, std::move(fn)});
}

const FunctionTable::Entry* FunctionTable::Find(std::string_view name) const {
  auto it = entries_.find(name);
  return it == entries_.end() ? nullptr : &it->second;
}

std::vector<std::string> FunctionTable::Names() const {
  std::vector<std::string> names;
  names.reserve(entries_.size());
  for (const auto& [name, entry] : entries_) names.push_back(name);
  return names;
}

FunctionTable BuiltinFunctions() {
  FunctionTable t;
  t.Add("test.ping", RunOn::kLoop, [](const JobCall&, const JobContext&) { return Ok(true); });
  t.Add("test.true", RunOn::kLoop, [](const JobCall&, const JobContext&) { return Ok(true); });
  t.Add("test.false", RunOn::kLoop, [](const JobCall&, const JobContext&) { return Ok(false); });
  t.Add("test.echo", RunOn::kLoop, [](const JobCall& call, const JobContext&) {
    const Value* text = Arg(call, 0, "text");
    return Ok(text != nullptr ? *text : Value(""));
  });
  t.Add("test.version", RunOn::kLoop,
        [](const JobCall&, const JobContext&) { return Ok(std::string("halite ") + kVersion); });
  t.Add("test.sleep", RunOn::kLoop, TestSleep);
  t.Add("test.arg", RunOn::kLoop, TestArg);
  t.Add("cmd.run", RunOn::kWorker, CmdRun);
  t.Add("cmd.run_all", RunOn::kWorker, CmdRunAll);
  t.Add("cp.recv_chunked", RunOn::kWorker, internal::CpRecvChunked);
  t.Add("grains.items", RunOn::kLoop, [](const JobCall&, const JobContext& ctx) {
    return Ok(ctx.grains != nullptr ? *ctx.grains : Value::EmptyMap());
  });
  t.Add("grains.item", RunOn::kLoop, GrainsItem);
  t.Add("grains.get", RunOn::kLoop, GrainsGet);
  t.Add("sys.list_functions", RunOn::kLoop, ListFunctions);
  t.Add("saltutil.find_job", RunOn::kLoop, FindJob);
  t.Add("saltutil.running", RunOn::kLoop, [](const JobCall&, const JobContext& ctx) {
    return Ok(ctx.running ? ctx.running() : Value::EmptyArray());
  });
  return t;
}

JobResult NotAvailable(std::string_view fun) {
  return JobResult{Value("'" + std::string(fun) + "' is not available."), 1, false, "nested"};
}

JobResult TimedOut(std::string_view what, std::chrono::milliseconds timeout) {
  auto seconds =
      std::max<std::int64_t>(0, std::chrono::round<std::chrono::seconds>(timeout).count());
  return JobResult{
      Value(std::string(what) + " : Timed out after " + std::to_string(seconds) + " seconds"), 1,
      false, ""};
}

}  // namespace halite::minion
