#include "halite/client/salt_command.h"

#include <cstdio>
#include <fstream>
#include <iomanip>
#include <sstream>

#include "halite/client/batch.h"
#include "halite/client/cli_args.h"
#include "halite/client/output.h"
#include "halite/wire/keyed_map.h"

namespace halite::client {

namespace {

using Clock = std::chrono::steady_clock;

// Where display_output writes: the --out-file (opened to append for every write, as Salt
// does) or stdout.
class Display {
 public:
  Display(const SaltCommandLine& cmd, SaltCommandContext& ctx) : cmd_(cmd), ctx_(ctx) {
    base_.color = cmd.force_color || (!cmd.no_color && ctx.out_is_terminal);
    base_.indent = cmd.out_indent;
    if (!cmd.state_output.empty()) base_.state_output = cmd.state_output;
    base_.state_verbose = cmd.state_verbose.value_or(true);
    base_.state_output_diff = cmd.output_diff;
  }

  // Salt's get_printout: --out wins (but --out highstate leaves it to the return), then the
  // outputter the minion named, then nested; under --static a state function's is highstate.
  OutputFormat FormatFor(const std::string& minion_out) const {
    if (!cmd_.out.empty() && cmd_.out != "highstate") {
      auto named = ParseOutputFormat(cmd_.out);
      return named.ok() ? *named : OutputFormat::kNested;  // salt falls back to nested too
    }
    if (!minion_out.empty()) {
      if (auto f = ParseOutputFormat(minion_out); f.ok()) return *f;
      return OutputFormat::kNested;
    }
    if (!cmd_.out.empty()) return OutputFormat::kHighstate;
    return OutputFormat::kNested;
  }

  void Show(const wire::Value& data, OutputFormat format, std::int64_t retcode = 0) {
    OutputOptions o = base_;
    o.retcode = retcode;
    Write(DisplayOutput(data, format, o));
  }

  // print_cli: a line on stdout, never to the --out-file.
  void Say(const std::string& line) { ctx_.out << line << "\n" << std::flush; }

 private:
  void Write(const std::string& text) {
    if (text.empty()) return;
    if (cmd_.out_file.empty()) {
      ctx_.out << text << std::flush;
      return;
    }
    std::ofstream f(cmd_.out_file, std::ios::app | std::ios::binary);
    f << text;
    if (!f) ctx_.err << "halite: cannot write " << cmd_.out_file << "\n";
  }

  const SaltCommandLine& cmd_;
  SaltCommandContext& ctx_;
  OutputOptions base_;
};

std::string NoResponse(const std::string& jid) {
  return "Minion did not return. [No response]\nThe minions may not have all finished running "
         "and any remaining minions will return upon completion. To look up the return data "
         "for this job later, run the following command:\n\nhalite-run jobs.lookup_jid " +
         jid;
}

struct Outcome {
  std::string id;
  wire::Value ret;
  std::int64_t retcode = 0;
  bool returned = true;
};

// SaltCMD._print_returns_summary.
void PrintSummary(const std::vector<Outcome>& outcomes, bool verbose, Display& display) {
  std::size_t returned = 0;
  std::vector<std::string> silent;
  std::vector<std::string> failed;
  for (const auto& o : outcomes) {
    if (!o.returned) {
      silent.push_back(o.id);
      continue;
    }
    ++returned;
    if (o.retcode != 0) failed.push_back(o.id);
  }
  auto join = [](const std::vector<std::string>& ids) {
    std::string s;
    for (const auto& id : ids) s += (s.empty() ? "" : " ") + id;
    return s;
  };
  display.Say("\n");
  display.Say("-------------------------------------------");
  display.Say("Summary");
  display.Say("-------------------------------------------");
  display.Say("# of minions targeted: " + std::to_string(outcomes.size()));
  display.Say("# of minions returned: " + std::to_string(returned));
  display.Say("# of minions that did not return: " + std::to_string(silent.size()));
  display.Say("# of minions with errors: " + std::to_string(failed.size()));
  if (verbose && !silent.empty()) display.Say("Minions not responding: " + join(silent));
  if (verbose && !failed.empty()) display.Say("Minions with failures: " + join(failed));
  display.Say("-------------------------------------------");
}

// progressbar's "NN% |####    | Elapsed Time: H:MM:SS Returns: [n/m]" on a terminal; one
// "Returns: [n/m]" line per return otherwise.
void ShowProgress(std::ostream& err, bool terminal, std::size_t got, std::size_t expected,
                  Clock::time_point started) {
  if (!terminal) {
    err << "Returns: [" << got << "/" << expected << "]\n" << std::flush;
    return;
  }
  const auto secs =
      std::chrono::duration_cast<std::chrono::seconds>(Clock::now() - started).count();
  const std::size_t pct = expected ? got * 100 / expected : 100;
  constexpr std::size_t kBar = 40;
  const std::size_t fill = expected ? got * kBar / expected : kBar;
  char elapsed[32];
  std::snprintf(elapsed, sizeof elapsed, "%lld:%02lld:%02lld", static_cast<long long>(secs / 3600),
                static_cast<long long>(secs / 60 % 60), static_cast<long long>(secs % 60));
  err << "\r" << std::setw(3) << pct << "% |" << std::string(fill, '#')
      << std::string(kBar - fill, ' ') << "| Elapsed Time: " << elapsed << " Returns: [" << got
      << "/" << expected << "]" << std::flush;
}

// The minions the target matches, as the master resolves it (a list).
Result<wire::Value> PreviewTarget(SaltCommandContext& ctx) {
  HALITE_ASSIGN_OR_RETURN(
      wire::Value reply,
      ctx.client.Call(wire::Value::MapOf({{"cmd", "_halite_preview_target"},
                                          {"tgt", ctx.request.tgt},
                                          {"tgt_type", ctx.request.tgt_type},
                                          {"delimiter", ctx.request.delimiter}})));
  const wire::Value* minions = reply.Find("minions");
  if (!minions || !minions->array()) return Error::DataLoss("the master sent no minion list");
  return *minions;
}

// The master's AuthenticationError / AuthorizationError (a publisher_acl user's refused
// publish, say): Salt's CLI prints the message as its output and exits 1.
bool ShowRefusal(const Error& e, Display& display) {
  if (e.code != ErrorCode::kUnauthenticated) return false;
  for (std::string_view name : {"AuthorizationError: ", "AuthenticationError: "}) {
    if (e.message.rfind(name, 0) == 0) {
      display.Show(wire::Value(e.message.substr(name.size())), display.FormatFor(""));
      return true;
    }
  }
  return false;
}

int RunBatchCommand(const SaltCommandLine& cmd, SaltCommandContext& ctx, Display& display) {
  const bool quiet = cmd.static_out;
  BatchOptions options;
  options.size = cmd.batch.empty() ? "100%" : cmd.batch;
  options.wait = std::chrono::milliseconds(static_cast<long long>(cmd.batch_wait * 1000));
  options.failhard = cmd.failhard;
  options.timeout =
      std::chrono::seconds(cmd.timeout.value_or(static_cast<int>(ctx.timeout.count())));
  options.gather_timeout = ctx.gather_job_timeout;
  PublishRequest job = ctx.request;
  job.extra_kwargs.clear();  // Salt's batch passes only --return on
  Batch batch(ctx.client, std::move(job), options);
  wire::KeyedMap gathered;  // --static over 10,000 minions: not a search of the ids before
  BatchSink sink;
  sink.say = [&](const std::string& line) {
    if (!quiet) display.Say(line);
  };
  sink.returned = [&](const MinionReturn& r, const wire::Value& shown) {
    gathered.Set(r.id, r.ret);
    if (!quiet) display.Show(shown, display.FormatFor(r.out));
  };
  sink.error = [&](const std::string& line) { ctx.err << line << "\n"; };
  auto rc = batch.Run(sink);
  if (!rc.ok()) {
    if (rc.error().code == ErrorCode::kInvalidArgument) {
      if (!quiet) display.Say(rc.error().message);
      return 1;
    }
    if (ShowRefusal(rc.error(), display)) return 1;
    ctx.err << "halite: " << rc.error().message << "\n";
    return 3;
  }
  if (!quiet) return *rc;
  // --static: every return at once, then Salt's _output_ret check.
  const OutputFormat format = !cmd.out.empty()                   ? display.FormatFor("")
                              : IsStateFunction(ctx.request.fun) ? OutputFormat::kHighstate
                                                                 : OutputFormat::kNested;
  const wire::Value all(std::move(gathered).Take());
  display.Show(all, format);
  if (all.map()->empty()) {
    ctx.err << "ERROR: No return received\n";
    return 2;
  }
  return 0;
}

}  // namespace

int RunSaltCommand(const SaltCommandLine& cmd, SaltCommandContext& ctx) {
  if (!cmd.out_file.empty() && !cmd.out_file_append) {
    std::ofstream truncate(cmd.out_file, std::ios::trunc);  // keeps the file's mode, as Salt
  }
  Display display(cmd, ctx);
  PublishRequest request = ctx.request;
  request.ret = cmd.ret;
  request.show_timeout = cmd.show_timeout;
  request.timeout =
      std::chrono::seconds(cmd.timeout.value_or(static_cast<int>(ctx.timeout.count())));
  if (!cmd.ret_config.empty()) request.extra_kwargs.emplace_back("ret_config", cmd.ret_config);
  if (!cmd.metadata.empty())
    request.extra_kwargs.emplace_back("metadata", YamlifyArg(cmd.metadata));
  ctx.request = request;
  if (!cmd.batch.empty() || cmd.static_out) {
    if (auto st = ctx.client.SubscribeEvents(); !st.ok()) {
      if (ShowRefusal(st.error(), display)) return 1;
      ctx.err << "halite: " << st.error().message << "\n";
      return 3;
    }
    return RunBatchCommand(cmd, ctx, display);
  }
  if (cmd.preview_target || cmd.batch_safe_limit > 1) {
    auto minions = PreviewTarget(ctx);
    if (!minions.ok()) {
      ctx.err << "halite: " << minions.error().message << "\n";
      return 3;
    }
    if (cmd.preview_target) {
      display.Show(*minions, display.FormatFor(""));
      return 0;
    }
    const std::size_t count = minions->array() ? minions->array()->size() : 0;
    if (count >= static_cast<std::size_t>(cmd.batch_safe_limit)) {
      display.Say("\nNOTICE: Too many minions targeted, switching to batch execution.");
      if (auto st = ctx.client.SubscribeEvents(); !st.ok()) {
        if (ShowRefusal(st.error(), display)) return 1;
        ctx.err << "halite: " << st.error().message << "\n";
        return 3;
      }
      SaltCommandLine batched = cmd;
      batched.batch = cmd.batch_safe_size;
      return RunBatchCommand(batched, ctx, display);
    }
  }
  if (!cmd.async) {
    if (auto st = ctx.client.SubscribeEvents(); !st.ok()) {
      if (ShowRefusal(st.error(), display)) return 1;
      ctx.err << "halite: " << st.error().message << "\n";
      return 3;
    }
  }
  auto job = ctx.client.Publish(request);
  if (!job.ok()) {
    if (job.error().code == ErrorCode::kNotFound) {
      display.Say("No minions matched the target. No command was sent, no jid was assigned.");
      ctx.err << "ERROR: No return received\n";
      return 2;
    }
    if (ShowRefusal(job.error(), display)) return 1;
    ctx.err << "halite: " << job.error().message << "\n";
    return 3;
  }
  if (cmd.async) {
    display.Say("Executed command with job ID: " + job->jid);
    return 0;
  }
  if (cmd.verbose) {
    const std::string msg = "Executing job with jid " + job->jid;
    display.Say(msg);
    display.Say(std::string(msg.size(), '-') + "\n");
  } else if (cmd.show_jid) {
    display.Say("jid: " + job->jid);
  }
  WaitOptions wait;
  wait.timeout = std::chrono::seconds(cmd.timeout.value_or(static_cast<int>(ctx.timeout.count())));
  wait.gather_timeout = ctx.gather_job_timeout;
  const auto started = Clock::now();
  if (cmd.progress) {
    wait.progress = [&](std::size_t got, std::size_t expected) {
      ShowProgress(ctx.err, ctx.err_is_terminal, got, expected, started);
    };
  }
  std::vector<Outcome> outcomes;
  bool failed = false;
  auto missing = ctx.client.WaitForReturns(*job, wait, [&](const MinionReturn& r) {
    const std::int64_t rc = r.retcode.value_or(0);
    outcomes.push_back({r.id, r.ret, rc, true});
    if (cmd.progress) return;  // salt -p prints the bar and the summary, not the returns
    failed = failed || rc != 0;
    display.Show(wire::Value::MapOf({{r.id, r.ret}}), display.FormatFor(r.out), rc);
  });
  if (cmd.progress && ctx.err_is_terminal) ctx.err << "\n" << std::flush;
  if (!missing.ok()) {
    ctx.err << "halite: " << missing.error().message << "\n";
    return 3;
  }
  // Salt reports the minions that did not return unless --hide-timeout (show_timeout false).
  if (cmd.show_timeout || cmd.verbose) {
    for (const auto& id : *missing) {
      outcomes.push_back({id, wire::Value(NoResponse(job->jid)), 1, false});
      if (cmd.progress) continue;
      failed = true;
      display.Show(wire::Value::MapOf({{id, wire::Value(NoResponse(job->jid))}}),
                   cmd.out.empty() ? OutputFormat::kNoReturn : display.FormatFor(""), 1);
    }
  }
  if (cmd.progress) {
    PrintSummary(outcomes, cmd.verbose, display);
    return 0;
  }
  if (cmd.summary && cmd.out.empty()) PrintSummary(outcomes, cmd.verbose, display);
  if (failed) {
    ctx.err << "ERROR: Minions returned with non-zero exit code\n";
    return 1;
  }
  return 0;
}

}  // namespace halite::client
