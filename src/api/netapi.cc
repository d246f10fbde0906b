#include "halite/api/netapi.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <string_view>
#include <thread>

#include "halite/api/wheel.h"
#include "halite/client/batch.h"
#include "halite/client/cli_args.h"
#include "halite/jobs/jid.h"
#include "halite/wire/event.h"
#include "halite/wire/keyed_map.h"
#include "halite/wire/target.h"

namespace halite::api {

namespace {

constexpr std::string_view kClients[] = {"local",        "local_async", "local_batch",
                                         "local_subset", "runner",      "runner_async",
                                         "ssh",          "wheel",       "wheel_async"};

// Keys of a chunk that are not a runner's or wheel's keyword arguments (RunnerClient's
// _reformat_low pops these).
constexpr std::string_view kReserved[] = {
    "client", "fun",  "arg", "kwarg",   "username",    "password",   "eauth",
    "token",  "user", "key", "timeout", "full_return", "print_event"};

const Error kAuthzError = Error::Unauthenticated("Authorization error occurred.");
constexpr std::string_view kFailedLogin = "Authentication failure of type \"eauth\" occurred.";

thread_local std::unique_ptr<client::LocalClient> tls_master;

std::string Str(const wire::Value& chunk, std::string_view key) {
  const wire::Value* v = chunk.Find(key);
  if (!v) return "";
  if (const std::string* s = v->str()) return *s;
  return wire::ScalarToString(*v);
}

// Salt's parse_input + the chunk's kwarg map + every other top-level key, as RunnerClient
// binds a low chunk: positional values then one {"__kwarg__": true, ...} map.
wire::Array RunnerArgs(const wire::Value& chunk, bool extra_keys) {
  wire::Array positional;
  // Keyed: a chunk's keys and words are a caller's (docs/security.md, finding 14).
  wire::KeyedMap kwargs(wire::Map{{wire::Value("__kwarg__"), wire::Value(true)}});
  if (const wire::Value* arg = chunk.Find("arg")) {
    wire::Array items = arg->array() ? *arg->array() : wire::Array{*arg};
    for (auto& item : items) {
      if (const std::string* s = item.str()) {
        auto [name, value] = client::SplitKwarg(*s);
        if (!name.empty()) {
          kwargs.Set(name, client::YamlifyArg(value));
          continue;
        }
      }
      if (item.is_map() && item.Find("__kwarg__")) {
        for (const auto& [k, v] : *item.map()) {
          if (k.str() && *k.str() != "__kwarg__") kwargs.Set(*k.str(), v);
        }
        continue;
      }
      positional.push_back(std::move(item));
    }
  }
  if (const wire::Value* kw = chunk.Find("kwarg"); kw && kw->map()) {
    for (const auto& [k, v] : *kw->map()) {
      if (k.str()) kwargs.Set(*k.str(), v);
    }
  }
  if (extra_keys && chunk.map()) {
    for (const auto& [k, v] : *chunk.map()) {
      const std::string* name = k.str();
      if (!name) continue;
      bool reserved = false;
      for (auto r : kReserved) reserved = reserved || r == *name;
      if (!reserved) kwargs.Set(*name, v);
    }
  }
  if (kwargs.size() > 1) positional.push_back(wire::Value(std::move(kwargs).Take()));
  return positional;
}

wire::Value KwargsOf(const wire::Array& args) {
  if (!args.empty() && args.back().is_map() && args.back().Find("__kwarg__")) {
    wire::Value out = args.back();
    out.Erase("__kwarg__");
    return out;
  }
  return wire::Value::EmptyMap();
}

wire::Array PositionalOf(const wire::Array& args) {
  wire::Array out = args;
  if (!out.empty() && out.back().is_map() && out.back().Find("__kwarg__")) out.pop_back();
  return out;
}

}  // namespace

bool YieldsEach(std::string_view client) { return client == "local_batch"; }

bool KnownClient(std::string_view client) {
  for (auto c : kClients) {
    if (c == client) return true;
  }
  return false;
}

int HttpStatusFor(const Error& error) {
  switch (error.code) {
    case ErrorCode::kUnauthenticated:
    case ErrorCode::kPermissionDenied:
      return 401;
    case ErrorCode::kInvalidArgument:
    case ErrorCode::kNotFound:
      return 400;
    case ErrorCode::kUnavailable:
      return 503;
    case ErrorCode::kDeadlineExceeded:
      return 504;
    case ErrorCode::kResourceExhausted:
      return 429;
    default:
      return 500;
  }
}

Netapi::Netapi(const config::MasterConfig& config, const ApiOptions& options,
               auth::Authenticator& authenticator)
    : config_(config),
      options_(options),
      auth_(authenticator),
      runners_(runners::BuiltinRunners()) {}

Netapi::~Netapi() {
  // runner_async calls still running hold `this`: wait for them (bounded by their runners'
  // own timeouts).
  std::unique_lock lock(async_mu_);
  async_done_.wait_for(lock, std::chrono::seconds(60), [this] { return async_running_ == 0; });
}

Result<client::LocalClient*> Netapi::Master() {
  if (!tls_master) {
    auto c = client::LocalClient::Connect(
        {config_.sock_dir, config_.cachedir, std::chrono::milliseconds(10000)});
    if (!c.ok()) return Error::Unavailable("Salt Master is not available. " + c.error().message);
    tls_master = std::move(*c);
  }
  return tls_master.get();
}

void Netapi::DropMaster() { tls_master.reset(); }

Status Netapi::FireEvent(const std::string& tag, const wire::Value& data) {
  HALITE_ASSIGN_OR_RETURN(client::LocalClient * master, Master());
  auto fired = master->Call(
      wire::Value::MapOf({{"cmd", "_halite_fire_event"}, {"tag", tag}, {"data", data}}));
  if (!fired.ok()) {
    if (fired.error().code == ErrorCode::kUnavailable) DropMaster();
    return fired.error();
  }
  return OkStatus();
}

std::string Netapi::NewJid() {
  // Unique within this process even when two calls share a microsecond.
  static jobs::JidGenerator generator;
  return generator.Next();
}

Result<auth::Token> Netapi::Authenticate(wire::Value& chunk, bool* minted) {
  *minted = false;
  if (const wire::Value* token = chunk.Find("token")) {
    const std::string* text = token->str();
    auto checked = text ? auth_.CheckToken(*text) : Result<auth::Token>(Error::Unauthenticated(""));
    if (!checked.ok()) {
      return Error::Unauthenticated("Authentication failure of type \"token\" occurred.");
    }
    return checked;
  }
  auto token = auth_.Login(Str(chunk, "username"), Str(chunk, "password"), Str(chunk, "eauth"));
  if (!token.ok()) {
    return Error::Unauthenticated(std::string(kFailedLogin));
  }
  *minted = true;
  return token;
}

bool Netapi::IsFailedLogin(const Error& error) {
  return error.code == ErrorCode::kUnauthenticated && error.message == kFailedLogin;
}

Result<wire::Value> Netapi::Run(wire::Value chunk) {
  if (!chunk.is_map()) return Error::InvalidArgument("Lowstates must be a list of maps");
  const std::string client = Str(chunk, "client");
  if (!KnownClient(client)) {
    return Error::InvalidArgument("Invalid client specified: '" + client + "'");
  }
  if (!options_.netapi_enable_clients.count(client)) {
    return Error::InvalidArgument("Client disabled: '" + client +
                                  "'. Add to 'netapi_enable_clients' master config option to "
                                  "enable.");
  }
  if (!chunk.Find("token") && !chunk.Find("eauth")) {
    return Error::Unauthenticated("No authentication credentials given");
  }
  bool minted = false;
  HALITE_ASSIGN_OR_RETURN(auth::Token token, Authenticate(chunk, &minted));
  Result<wire::Value> out =
      Error::InvalidArgument("client '" + client + "' is not supported by halite-api");
  if (client == "local" || client == "local_async") {
    out = Local(token, chunk, client == "local_async");
  } else if (client == "local_batch") {
    out = LocalBatch(token, chunk);
  } else if (client == "runner" || client == "runner_async") {
    out = Runner(token, chunk, client == "runner_async");
  } else if (client == "wheel" || client == "wheel_async") {
    out = Wheel(token, chunk, client == "wheel_async");
  }
  if (minted) (void)auth_.Logout(token.token);
  return out;
}

Result<client::PublishRequest> Netapi::LocalRequest(const auth::Token& token,
                                                    const wire::Value& chunk) {
  const wire::Value* tgt = chunk.Find("tgt");
  const wire::Value* fun = chunk.Find("fun");
  if (!tgt || !fun) return Error::InvalidArgument("local needs tgt and fun");
  client::PublishRequest req;
  req.tgt = *tgt;
  req.fun = *fun;
  req.tgt_type = Str(chunk, "tgt_type");
  if (req.tgt_type.empty()) req.tgt_type = Str(chunk, "expr_form");
  if (req.tgt_type.empty()) req.tgt_type = "glob";
  if (const wire::Value* arg = chunk.Find("arg")) {
    req.arg = arg->array() ? *arg->array() : wire::Array{*arg};
  }
  if (const wire::Value* kw = chunk.Find("kwarg"); kw && kw->map() && !kw->map()->empty()) {
    wire::KeyedMap m(wire::Map{{wire::Value("__kwarg__"), wire::Value(true)}});
    for (const auto& [k, v] : *kw->map()) {
      if (k.str()) m.Set(*k.str(), v);
    }
    req.arg.push_back(wire::Value(std::move(m).Take()));
  }
  req.ret = Str(chunk, "ret");
  req.token = token.token;
  return req;
}

// A refused publish as the local clients answer it (the master's AuthorizationError is
// rest_cherrypy's 401 "Authorization error occurred.").
Error Netapi::PublishError(const auth::Token& token, const wire::Value& chunk, const Error& e) {
  if (e.code == ErrorCode::kUnauthenticated) {
    spdlog::warn("{} {} for {}: {}", Str(chunk, "client"), Str(chunk, "fun"), token.name,
                 e.message);
    if (e.message.rfind("AuthorizationError", 0) == 0) return kAuthzError;
    return Error::Unauthenticated("Authentication failure of type \"token\" occurred.");
  }
  if (e.code == ErrorCode::kUnavailable) DropMaster();
  return e;
}

Result<wire::Value> Netapi::Local(const auth::Token& token, wire::Value& chunk, bool async) {
  HALITE_ASSIGN_OR_RETURN(client::PublishRequest req, LocalRequest(token, chunk));
  auto timeout = config_.timeout;
  if (const wire::Value* t = chunk.Find("timeout"); t && t->float64() && *t->float64() > 0) {
    timeout = std::chrono::seconds(static_cast<std::int64_t>(*t->float64()));
  }
  HALITE_ASSIGN_OR_RETURN(client::LocalClient * master, Master());
  if (!async) {
    if (Status st = master->SubscribeEvents(); !st.ok()) {
      DropMaster();
      return Error::Unavailable(st.error().message);
    }
  }
  auto job = master->Publish(req);
  if (!job.ok()) {
    // No minion matched: an empty return, as Salt's cmd.
    if (job.error().code == ErrorCode::kNotFound) return wire::Value::EmptyMap();
    return PublishError(token, chunk, job.error());
  }
  if (async) {
    wire::Array minions;
    for (const auto& m : job->minions) minions.emplace_back(m);
    return wire::Value::MapOf({{"jid", job->jid}, {"minions", wire::Value(std::move(minions))}});
  }
  wire::KeyedMap out;  // 10,000 returns: Value::Set would compare each id with those before
  client::WaitOptions wait;
  wait.timeout = std::chrono::duration_cast<std::chrono::milliseconds>(timeout);
  wait.gather_timeout =
      std::chrono::duration_cast<std::chrono::milliseconds>(config_.gather_job_timeout);
  auto missing = master->WaitForReturns(
      *job, wait, [&](const client::MinionReturn& r) { out.Set(r.id, r.ret); });
  if (!missing.ok()) {
    DropMaster();
    return missing.error();
  }
  return wire::Value(std::move(out).Take());
}

Result<wire::Value> Netapi::LocalBatch(const auth::Token& token, wire::Value& chunk) {
  HALITE_ASSIGN_OR_RETURN(client::PublishRequest req, LocalRequest(token, chunk));
  // Salt's cmd_batch: batch (default 10%), batch_wait (int seconds), failhard (off unless
  // given: halite reads no master-side failhard), timeout and gather_job_timeout (the
  // config's unless given).
  client::BatchOptions options;
  options.size = chunk.Find("batch") ? Str(chunk, "batch") : "10%";
  auto seconds = [&](std::string_view key, std::chrono::seconds fallback) {
    const wire::Value* v = chunk.Find(key);
    double s = static_cast<double>(fallback.count());
    if (v && v->float64()) {
      s = *v->float64();
    } else if (const std::string* text = v ? v->str() : nullptr) {
      char* end = nullptr;
      const double parsed = std::strtod(text->c_str(), &end);
      if (end != text->c_str() && *end == '\0') s = parsed;
    }
    return std::chrono::milliseconds(static_cast<std::int64_t>(std::max(0.0, s) * 1000));
  };
  options.timeout = seconds("timeout", config_.timeout);
  options.gather_timeout = seconds("gather_job_timeout", config_.gather_job_timeout);
  if (chunk.Find("batch_wait")) {
    // int(batch_wait), as cmd_batch converts it.
    options.wait = std::chrono::duration_cast<std::chrono::seconds>(
        seconds("batch_wait", std::chrono::seconds(0)));
  }
  if (const wire::Value* failhard = chunk.Find("failhard")) options.failhard = failhard->Truthy();
  HALITE_ASSIGN_OR_RETURN(client::LocalClient * master, Master());
  if (Status st = master->SubscribeEvents(); !st.ok()) {
    DropMaster();
    return Error::Unavailable(st.error().message);
  }
  // The token rides on every publish of the batch, the ping included (Salt's Batch passes
  // the eauth to both), so the master checks the user's ACL for each as for `local`.
  wire::Array returns;
  client::BatchSink sink;
  sink.say = [](const std::string&) {};
  sink.error = [&](const std::string& line) { spdlog::info("local_batch: {}", line); };
  sink.returned = [&](const client::MinionReturn& r, const wire::Value&) {
    returns.push_back(wire::Value::MapOf({{r.id, r.ret}}));
  };
  client::Batch batch(*master, std::move(req), std::move(options));
  auto ran = batch.Run(sink);
  if (!ran.ok()) return PublishError(token, chunk, ran.error());
  return wire::Value(std::move(returns));
}

Result<wire::Value> Netapi::CallRunner(const std::string& fun, const wire::Array& args) {
  const runners::Runner* runner = runners_.Find(fun);
  if (!runner) return Error::InvalidArgument("'" + fun + "' is not available.");
  auto bound = runners::Bind(fun, runner->params, runner->takes_kwargs, args);
  if (!bound.ok()) {
    return Error::InvalidArgument("Passed invalid arguments: " + bound.error().message);
  }
  runners::RunnerEnv env;
  env.config = &config_;
  env.timeout = config_.timeout;
  env.master = [this]() { return Master(); };
  env.progress = [](const std::string&) {};
  auto result = runner->fn(env, *bound);
  if (!result.ok()) {
    if (result.error().code == ErrorCode::kUnavailable) DropMaster();
    return result.error();
  }
  return std::move(result->data);
}

Result<wire::Value> Netapi::Runner(const auth::Token& token, wire::Value& chunk, bool async) {
  const std::string fun = Str(chunk, "fun");
  const wire::Array args = RunnerArgs(chunk, true);
  HALITE_ASSIGN_OR_RETURN(
      bool allowed, auth::SpecCheck(auth_.AuthList(token), fun, wire::Value(PositionalOf(args)),
                                    KwargsOf(args), auth::SpecForm::kRunner));
  if (!allowed) {
    spdlog::warn("runner {} refused for {} ({}): not in external_auth", fun, token.name,
                 token.eauth);
    return kAuthzError;
  }
  const std::string jid = NewJid();
  const std::string tag = "salt/run/" + jid;
  auto event = [&](const char* what, wire::Value extra) {
    wire::Value data = wire::Value::MapOf({{"fun", "runner." + fun},
                                           {"fun_args", wire::Value(args)},
                                           {"jid", jid},
                                           {"user", token.name}});
    for (auto& [k, v] : *extra.map()) data.Set(*k.str(), v);
    (void)FireEvent(tag + "/" + what, data);
  };
  if (async) {
    // Runs on a worker of its own; the caller gets the tag at once and the result as the
    // salt/run/<jid>/ret event, as Salt's runner_async does.
    {
      std::lock_guard lock(async_mu_);
      if (async_running_ >= kMaxAsyncRunners) {
        return Error::ResourceExhausted("too many runner_async calls running");
      }
      ++async_running_;
    }
    event("new", wire::Value::EmptyMap());
    std::thread([this, fun, args, jid, tag, user = token.name]() {
      auto result = CallRunner(fun, args);
      wire::Value data = wire::Value::MapOf(
          {{"fun", "runner." + fun},
           {"fun_args", wire::Value(args)},
           {"jid", jid},
           {"user", user},
           {"return", result.ok() ? *result : wire::Value(result.error().message)},
           {"success", result.ok()}});
      (void)FireEvent(tag + "/ret", data);
      DropMaster();
      std::lock_guard lock(async_mu_);
      --async_running_;
      async_done_.notify_all();
    }).detach();
    return wire::Value::MapOf({{"tag", tag}, {"jid", jid}});
  }
  event("new", wire::Value::EmptyMap());
  auto result = CallRunner(fun, args);
  event("ret",
        wire::Value::MapOf({{"return", result.ok() ? *result : wire::Value(result.error().message)},
                            {"success", result.ok()}}));
  return result;
}

Result<wire::Value> Netapi::Wheel(const auth::Token& token, wire::Value& chunk, bool async) {
  const std::string fun = Str(chunk, "fun");
  const wire::Array args = RunnerArgs(chunk, true);
  HALITE_ASSIGN_OR_RETURN(
      bool allowed, auth::SpecCheck(auth_.AuthList(token), fun, wire::Value(PositionalOf(args)),
                                    KwargsOf(args), auth::SpecForm::kWheel));
  if (!allowed) {
    spdlog::warn("wheel {} refused for {} ({}): not in external_auth", fun, token.name,
                 token.eauth);
    return kAuthzError;
  }
  WheelEnv env;
  env.config = &config_;
  env.fire_key_events = [this](const wire::Array& events) {
    auto master = Master();
    if (!master.ok()) return;
    auto fired = (*master)->Call(
        wire::Value::MapOf({{"cmd", "_halite_key_event"}, {"events", wire::Value(events)}}));
    if (!fired.ok()) spdlog::warn("salt/key events not fired: {}", fired.error().message);
  };
  // Salt's wheel minions.connected is manage.present's list: the same presence runner.
  env.connected_ids = [this] { return CallRunner("manage.present", {}); };
  const std::string jid = NewJid();
  const std::string tag = "salt/wheel/" + jid;
  auto result = RunWheel(env, fun, PositionalOf(args), KwargsOf(args));
  if (!result.ok()) return result.error();
  wire::Value data = wire::Value::MapOf({{"fun", "wheel." + fun},
                                         {"jid", jid},
                                         {"user", token.name},
                                         {"tag", tag},
                                         {"return", *result},
                                         {"success", true}});
  (void)FireEvent(tag + "/new", wire::Value::MapOf(
                                    {{"fun", "wheel." + fun}, {"jid", jid}, {"user", token.name}}));
  (void)FireEvent(tag + "/ret", data);
  if (async) return wire::Value::MapOf({{"tag", tag}, {"jid", jid}});
  wire::AddStamp(data);
  return wire::Value::MapOf({{"tag", tag}, {"data", std::move(data)}});
}

}  // namespace halite::api
