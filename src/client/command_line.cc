#include "halite/client/command_line.h"

#include <charconv>
#include <functional>
#include <string_view>

#include "halite/client/cli_args.h"

namespace halite::client {

namespace {

using Setter = std::function<Status(SaltCommandLine&, const std::string&)>;

struct Option {
  std::vector<std::string> names;  // "-t", "--timeout"
  bool takes_value = false;
  Setter set;            // null: a Salt option halite does not implement yet
  std::string tgt_type;  // a target option: the tgt_type it selects
};

Status Flag(bool SaltCommandLine::*field, SaltCommandLine& c) {
  c.*field = true;
  return OkStatus();
}

const std::vector<Option>& Options() {
  static const std::vector<Option> options = [] {
    std::vector<Option> o;
    auto flag = [&](std::vector<std::string> names, bool SaltCommandLine::*field) {
      o.push_back({std::move(names), false,
                   [field](SaltCommandLine& c, const std::string&) { return Flag(field, c); }, ""});
    };
    auto value = [&](std::vector<std::string> names, Setter set) {
      o.push_back({std::move(names), true, std::move(set), ""});
    };
    auto ignored = [&](std::vector<std::string> names, bool takes_value) {
      o.push_back({std::move(names), takes_value,
                   [](SaltCommandLine&, const std::string&) { return OkStatus(); }, ""});
    };
    auto missing = [&](std::vector<std::string> names, bool takes_value) {
      o.push_back({std::move(names), takes_value, nullptr, ""});
    };
    auto target = [&](std::vector<std::string> names, std::string type) {
      o.push_back({std::move(names), false, nullptr, std::move(type)});
    };
    flag({"-h", "--help"}, &SaltCommandLine::help);
    flag({"--version"}, &SaltCommandLine::version);
    value({"-c", "--config-dir", "--config"}, [](SaltCommandLine& c, const std::string& v) {
      c.config_path = v;
      return OkStatus();
    });
    value({"-t", "--timeout"}, [](SaltCommandLine& c, const std::string& v) -> Status {
      int seconds = 0;
      auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), seconds);
      if (ec != std::errc() || end != v.data() + v.size()) {
        return Error::InvalidArgument("option -t: invalid integer value: '" + v + "'");
      }
      c.timeout = seconds;
      return OkStatus();
    });
    value({"--out", "--output"}, [](SaltCommandLine& c, const std::string& v) {
      c.out = v;
      return OkStatus();
    });
    value({"--delimiter"}, [](SaltCommandLine& c, const std::string& v) {
      c.delimiter = v;
      return OkStatus();
    });
    value({"--args-separator"}, [](SaltCommandLine& c, const std::string& v) {
      c.args_separator = v;
      return OkStatus();
    });
    value({"--no-parse"}, nullptr);  // filled in below: it needs the parse state
    flag({"--async"}, &SaltCommandLine::async);
    flag({"-v", "--verbose"}, &SaltCommandLine::verbose);
    flag({"--show-jid"}, &SaltCommandLine::show_jid);
    // The CLI logs nothing: these change nothing.
    ignored({"-l", "--log-level"}, true);
    ignored({"--log-file"}, true);
    ignored({"--log-file-level"}, true);
    ignored({"--hard-crash"}, false);
    flag({"--no-color", "--no-colour"}, &SaltCommandLine::no_color);
    flag({"--force-color", "--force-colour"}, &SaltCommandLine::force_color);
    flag({"-s", "--static"}, &SaltCommandLine::static_out);
    flag({"-p", "--progress"}, &SaltCommandLine::progress);
    flag({"--failhard"}, &SaltCommandLine::failhard);
    flag({"--summary"}, &SaltCommandLine::summary);
    flag({"--output-diff"}, &SaltCommandLine::output_diff);
    flag({"--out-file-append", "--output-file-append"}, &SaltCommandLine::out_file_append);
    o.push_back({{"--hide-timeout"},
                 false,
                 [](SaltCommandLine& c, const std::string&) {
                   c.show_timeout = false;
                   return OkStatus();
                 },
                 ""});
    auto text = [&](std::vector<std::string> names, std::string SaltCommandLine::*field) {
      value(std::move(names), [field](SaltCommandLine& c, const std::string& v) {
        c.*field = v;
        return OkStatus();
      });
    };
    text({"-b", "--batch", "--batch-size"}, &SaltCommandLine::batch);
    text({"--out-file", "--output-file"}, &SaltCommandLine::out_file);
    text({"--state-output", "--state_output"}, &SaltCommandLine::state_output);
    text({"--return"}, &SaltCommandLine::ret);
    text({"--return_config"}, &SaltCommandLine::ret_config);
    text({"--metadata"}, &SaltCommandLine::metadata);
    value({"--state-verbose", "--state_verbose"}, [](SaltCommandLine& c, const std::string& v) {
      // Salt: "True"/"true" and "False"/"false"; any other text is kept, and is truthy.
      c.state_verbose = !(v == "False" || v == "false");
      return OkStatus();
    });
    value({"--out-indent", "--output-indent"},
          [](SaltCommandLine& c, const std::string& v) -> Status {
            int n = 0;
            auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), n);
            if (ec != std::errc() || end != v.data() + v.size()) {
              return Error::InvalidArgument("option --out-indent: invalid integer value: '" + v +
                                            "'");
            }
            c.out_indent = n;
            return OkStatus();
          });
    value({"--batch-safe-limit"}, [](SaltCommandLine& c, const std::string& v) -> Status {
      int n = 0;
      auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), n);
      if (ec != std::errc() || end != v.data() + v.size()) {
        return Error::InvalidArgument("option --batch-safe-limit: invalid integer value: '" + v +
                                      "'");
      }
      c.batch_safe_limit = n;
      return OkStatus();
    });
    text({"--batch-safe-size"}, &SaltCommandLine::batch_safe_size);
    flag({"--preview-target"}, &SaltCommandLine::preview_target);
    value({"--batch-wait"}, [](SaltCommandLine& c, const std::string& v) -> Status {
      double seconds = 0;
      auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), seconds);
      if (ec != std::errc() || end != v.data() + v.size() || seconds < 0) {
        return Error::InvalidArgument("option --batch-wait: invalid floating-point value: '" + v +
                                      "'");
      }
      c.batch_wait = seconds;
      return OkStatus();
    });
    target({"-E", "--pcre"}, "pcre");
    target({"-L", "--list"}, "list");
    target({"-G", "--grain"}, "grain");
    target({"-P", "--grain-pcre"}, "grain_pcre");
    target({"-N", "--nodegroup"}, "nodegroup");
    target({"-R", "--range"}, "range");
    target({"-C", "--compound"}, "compound");
    target({"-I", "--pillar"}, "pillar");
    target({"-J", "--pillar-pcre"}, "pillar_pcre");
    target({"-S", "--ipcidr"}, "ipcidr");
    for (auto names :
         std::vector<std::vector<std::string>>{{"--saltfile"},
                                               {"--module-executors"},
                                               {"--executor-opts"},
                                               {"--subset"},
                                               {"--return_kwargs"},
                                               {"-a", "--auth", "--eauth", "--external-auth"},
                                               {"--username"},
                                               {"--password"}}) {
      missing(std::move(names), true);
    }
    for (auto names : std::vector<std::vector<std::string>>{{"-V", "--versions-report"},
                                                            {"--args-stdin"},
                                                            {"-d", "--doc", "--documentation"},
                                                            {"--config-dump"},
                                                            {"-H", "--hosts"},
                                                            {"-T", "--make-token"}}) {
      missing(std::move(names), false);
    }
    return o;
  }();
  return options;
}

const Option* FindShort(char c) {
  const std::string name{'-', c};
  for (const auto& opt : Options()) {
    for (const auto& n : opt.names) {
      if (n == name) return &opt;
    }
  }
  return nullptr;
}

// optparse: an exact long name, else the one option that name is a prefix of.
Result<const Option*> FindLong(const std::string& name) {
  std::vector<std::pair<const Option*, std::string>> prefixed;
  for (const auto& opt : Options()) {
    for (const auto& n : opt.names) {
      if (n.size() < 3 || n[1] != '-') continue;
      if (n == name) return &opt;
      if (n.rfind(name, 0) == 0) prefixed.emplace_back(&opt, n);
    }
  }
  if (prefixed.empty()) return Error::InvalidArgument("no such option: " + name);
  for (const auto& [opt, n] : prefixed) {
    if (opt != prefixed.front().first) {
      std::string names;
      for (const auto& [o, candidate] : prefixed) names += (names.empty() ? "" : ", ") + candidate;
      return Error::InvalidArgument("ambiguous option: " + name + " (" + names + "?)");
    }
  }
  return prefixed.front().first;
}

std::string FirstLong(const Option& opt) {
  for (const auto& n : opt.names) {
    if (n.rfind("--", 0) == 0) return n;
  }
  return opt.names.front();
}

std::vector<std::string> SplitOn(const std::string& text, const std::string& sep) {
  std::vector<std::string> out;
  std::size_t start = 0;
  for (;;) {
    std::size_t at = sep.empty() ? std::string::npos : text.find(sep, start);
    out.push_back(text.substr(start, at == std::string::npos ? std::string::npos : at - start));
    if (at == std::string::npos) return out;
    start = at + sep.size();
  }
}

std::vector<std::string> SplitWhitespace(const std::string& text) {
  std::vector<std::string> out;
  std::size_t pos = 0;
  while ((pos = text.find_first_not_of(" \t\n\r\f\v", pos)) != std::string::npos) {
    std::size_t end = text.find_first_of(" \t\n\r\f\v", pos);
    if (end == std::string::npos) end = text.size();
    out.push_back(text.substr(pos, end - pos));
    pos = end;
  }
  return out;
}

// Salt's compound command: one argument list per function.
Result<std::vector<std::vector<std::string>>> SplitArgLists(const std::vector<std::string>& words,
                                                            std::size_t funs,
                                                            const std::string& sep) {
  std::vector<std::vector<std::string>> lists(1);
  std::size_t standalone = 0;
  for (const auto& w : words) standalone += w == sep ? 1 : 0;
  if (standalone == funs - 1) {
    for (const auto& w : words) {
      if (w == sep) {
        lists.emplace_back();
      } else {
        lists.back().push_back(w);
      }
    }
    return lists;
  }
  for (const auto& w : words) {
    if (sep.empty() || w.find(sep) == std::string::npos) {
      lists.back().push_back(w);
      continue;
    }
    std::vector<std::string> parts = SplitOn(w, sep);
    for (std::size_t i = 0; i < parts.size(); ++i) {
      if (!parts[i].empty()) lists.back().push_back(parts[i]);
      if (i + 1 != parts.size()) lists.emplace_back();
    }
  }
  if (funs > lists.size()) {
    return Error::FailedPrecondition(
        "Cannot execute compound command without defining all arguments.");
  }
  if (funs < lists.size()) {
    return Error::FailedPrecondition(
        "Cannot execute compound command with more arguments than commands.");
  }
  return lists;
}

}  // namespace

Result<SaltCommandLine> ParseSaltCommandLine(const std::vector<std::string>& words) {
  SaltCommandLine c;
  std::vector<std::string> positional;
  std::vector<const Option*> targets;
  std::set<std::string, std::less<>> no_parse;
  auto apply = [&](const Option& opt, const std::string& value) -> Status {
    if (!opt.tgt_type.empty()) {
      bool seen = false;
      for (const Option* t : targets) seen = seen || t == &opt;
      if (!seen) targets.push_back(&opt);
      return OkStatus();
    }
    if (opt.names.front() == "--no-parse") {
      for (const auto& name : SplitOn(value, ",")) no_parse.insert(name);
      return OkStatus();
    }
    if (!opt.set) {
      return Error::InvalidArgument("option " + FirstLong(opt) +
                                    " is not supported by halite yet (see docs/cli.md)");
    }
    return opt.set(c, value);
  };
  for (std::size_t i = 0; i < words.size(); ++i) {
    const std::string& w = words[i];
    if (w == "--") {
      positional.insert(positional.end(), words.begin() + static_cast<std::ptrdiff_t>(i) + 1,
                        words.end());
      break;
    }
    if (w.rfind("--", 0) == 0) {
      const std::size_t eq = w.find('=');
      HALITE_ASSIGN_OR_RETURN(const Option* opt, FindLong(w.substr(0, eq)));
      std::string value;
      if (opt->takes_value) {
        if (eq != std::string::npos) {
          value = w.substr(eq + 1);
        } else if (i + 1 < words.size()) {
          value = words[++i];
        } else {
          return Error::InvalidArgument(w + " option requires 1 argument");
        }
      } else if (eq != std::string::npos) {
        return Error::InvalidArgument(w.substr(0, eq) + " option does not take a value");
      }
      HALITE_RETURN_IF_ERROR(apply(*opt, value));
    } else if (w.size() > 1 && w[0] == '-') {
      for (std::size_t k = 1; k < w.size(); ++k) {
        const Option* opt = FindShort(w[k]);
        if (opt == nullptr) return Error::InvalidArgument("no such option: -" + w.substr(k, 1));
        std::string value;
        if (opt->takes_value) {
          if (k + 1 < w.size()) {
            value = w.substr(k + 1);
          } else if (i + 1 < words.size()) {
            value = words[++i];
          } else {
            return Error::InvalidArgument("-" + w.substr(k, 1) + " option requires 1 argument");
          }
          HALITE_RETURN_IF_ERROR(apply(*opt, value));
          break;
        }
        HALITE_RETURN_IF_ERROR(apply(*opt, value));
      }
    } else {
      positional.push_back(w);
    }
    if (c.help || c.version) return c;
  }
  if (targets.size() > 1) {
    std::string names;
    for (const Option* t : targets) names += (names.empty() ? "" : "/") + FirstLong(*t);
    return Error::InvalidArgument("The options " + names +
                                  " are mutually exclusive. Please only choose one of them");
  }
  if (!targets.empty()) {
    if (targets.front()->tgt_type == "range") {
      return Error::InvalidArgument(
          "option --range is not supported by halite yet (see "
          "docs/cli.md)");
    }
    c.tgt_type = targets.front()->tgt_type;
  }
  if (positional.empty()) {
    return Error::FailedPrecondition("Cannot execute command without defining a target.");
  }
  if (positional.size() < 2) return Error::FailedPrecondition("Incomplete options passed.");
  if (c.tgt_type == "list") {
    const std::string& t = positional[0];
    std::vector<std::string> ids;
    if (t.find(',') != std::string::npos) {
      std::string joined;
      for (char ch : t) {
        if (ch != ' ') joined.push_back(ch);
      }
      ids = SplitOn(joined, ",");
    } else {
      ids = SplitWhitespace(t);
    }
    wire::Array list;
    for (auto& id : ids) list.emplace_back(std::move(id));
    c.tgt = wire::Value(std::move(list));
  } else {
    c.tgt = wire::Value(positional[0]);
  }
  const std::vector<std::string> rest(positional.begin() + 2, positional.end());
  if (positional[1].find(',') == std::string::npos) {
    c.fun = wire::Value(positional[1]);
    c.arg = ParseCliArgs(rest, no_parse);
    return c;
  }
  const std::vector<std::string> funs = SplitOn(positional[1], ",");
  HALITE_ASSIGN_OR_RETURN(auto lists, SplitArgLists(rest, funs.size(), c.args_separator));
  wire::Array fun_list;
  for (const auto& f : funs) fun_list.emplace_back(f);
  c.fun = wire::Value(std::move(fun_list));
  for (const auto& list : lists) c.arg.emplace_back(ParseCliArgs(list, no_parse));
  c.multi_function = true;
  return c;
}

int CommandLineExitCode(const Error& error) {
  return error.code == ErrorCode::kFailedPrecondition ? 42 : 64;
}

}  // namespace halite::client
