// salt.output.highstate (3007): one block per minion, one entry per state in run order
// (full, terse, mixed, changes and their _id variants), then "Summary for <id>".
// state_output "filter", state_tabular, state_compress_ids and state_output_pct are not
// implemented (Salt's defaults are used).
#include <algorithm>
#include <charconv>
#include <map>

#include "output_internal.h"

namespace halite::client::internal {

namespace {

std::vector<std::string> SplitOn(const std::string& text, const std::string& sep) {
  std::vector<std::string> out;
  std::size_t start = 0;
  for (;;) {
    std::size_t at = text.find(sep, start);
    out.push_back(text.substr(start, at == std::string::npos ? std::string::npos : at - start));
    if (at == std::string::npos) return out;
    start = at + sep.size();
  }
}

std::string Replace(std::string text, const std::string& from, const std::string& to) {
  std::size_t pos = 0;
  while ((pos = text.find(from, pos)) != std::string::npos) {
    text.replace(pos, from.size(), to);
    pos += to.size();
  }
  return text;
}

// "{0:>{1}}".format(text, width)
std::string RightAlign(const std::string& text, int width) {
  const int pad = width - static_cast<int>(text.size());
  return pad > 0 ? std::string(static_cast<std::size_t>(pad), ' ') + text : text;
}

std::optional<double> ParseDuration(const wire::Value* v) {
  if (v == nullptr) return 0.0;
  if (auto d = v->float64(); d && !v->is_bool()) return *d;
  if (const std::string* s = v->str()) {
    std::string text = *s;
    if (auto at = text.find(" ms"); at != std::string::npos) text = text.substr(0, at);
    text = Strip(text);
    double d = 0;
    auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), d);
    if (ec == std::errc() && end == text.data() + text.size()) return d;
  }
  return std::nullopt;
}

// textwrap.fill(text, 80, initial_indent=14 spaces, subsequent_indent=14 spaces), words split
// on whitespace.
std::string Wrap(const std::string& text) {
  const std::string pad(14, ' ');
  std::vector<std::string> words;
  std::size_t pos = 0;
  while ((pos = text.find_first_not_of(" \t\n\r\f\v", pos)) != std::string::npos) {
    std::size_t end = text.find_first_of(" \t\n\r\f\v", pos);
    if (end == std::string::npos) end = text.size();
    words.push_back(text.substr(pos, end - pos));
    pos = end;
  }
  std::string out;
  std::string line;
  for (const auto& w : words) {
    if (!line.empty() && line.size() + 1 + w.size() > 80) {
      out += (out.empty() ? "" : "\n") + line;
      line.clear();
    }
    line = line.empty() ? pad + w : line + " " + w;
  }
  if (!line.empty()) out += (out.empty() ? "" : "\n") + line;
  return out;
}

class HighstateFormatter {
 public:
  explicit HighstateFormatter(const OutputOptions& o) : o_(o), c_(GetColors(o.color)) {}

  // output(): nullopt where Salt's raises KeyError/AttributeError/TypeError.
  std::optional<std::string> Output(wire::Value data, int indent_level) {
    if (const wire::Value* r = data.Find("return"); r && data.is_map()) data = wire::Value(*r);
    if (const wire::Value* d = data.Find("data"); d && data.is_map()) data = wire::Value(*d);
    if (const wire::Map* m = data.map(); m && m->size() == 1 && m->front().second.is_map()) {
      const wire::Value& inner = m->front().second;
      if (inner.Find("jid") && inner.Find("fun")) {
        const wire::Value* ret = inner.Find("return");
        if (ret && !ret->is_map()) return std::nullopt;
        if (const wire::Value* d = ret ? ret->Find("data") : nullptr) data = wire::Value(*d);
      }
    }
    if (data.is_int() || data.is_bool() || data.is_str()) return PyStr(data);
    if (data.is_nil()) return std::string("None");
    const wire::Map* hosts = data.map();
    if (hosts == nullptr) return std::nullopt;
    std::vector<std::string> parts;
    for (const auto& [host, hostdata] : *hosts) {
      auto block = Host(PyStr(host), hostdata, indent_level);
      if (!block) return std::nullopt;
      parts.push_back(std::move(block->first));
    }
    std::string out;
    for (std::size_t i = 0; i < parts.size(); ++i) out += (i ? "\n" : "") + parts[i];
    return out;
  }

 private:
  struct Counts {
    std::map<std::string, long> by_result;  // "True", "False", "None", other results, "warnings"
    long Get(const std::string& k) const {
      auto it = by_result.find(k);
      return it == by_result.end() ? 0 : it->second;
    }
  };

  std::string C(const std::string& color, const std::string& text) const {
    return color + text + c_.endc;
  }

  std::optional<std::pair<std::string, bool>> Host(const std::string& host, const wire::Value& data,
                                                   int indent_level) {
    std::string hcolor = c_.green;
    std::vector<std::string> hstrs;
    long nchanges = 0;
    if (data.is_int() || data.is_bool()) {
      nchanges = 1;
      hstrs.push_back(C(hcolor, "    " + PyStr(data)));
      hcolor = c_.cyan;
    } else if (const std::string* s = data.str()) {
      nchanges = 1;
      for (const auto& line : SplitLines(*s)) hstrs.push_back(C(hcolor, "    " + line));
      hcolor = c_.cyan;
    } else if (const wire::Array* errors = data.array()) {
      hcolor = c_.light_red;
      hstrs.push_back("    " + C(hcolor, "Data failed to compile:"));
      for (const auto& err : *errors) {
        const std::string text = err.is_str() ? StripEsc(*err.str()) : PyStr(err);
        hstrs.push_back(C(hcolor, "----------\n    " + text));
      }
    } else if (const wire::Map* states = data.map()) {
      if (!States(host, *states, indent_level, hcolor, hstrs, nchanges)) return std::nullopt;
    }
    hstrs.insert(hstrs.begin(), C(hcolor, StripEsc(host) + ":"));
    std::string out;
    for (std::size_t i = 0; i < hstrs.size(); ++i) out += (i ? "\n" : "") + hstrs[i];
    return std::make_pair(out, nchanges > 0);
  }

  bool States(const std::string& host, const wire::Map& states, int indent_level,
              std::string& hcolor, std::vector<std::string>& hstrs, long& nchanges) {
    std::vector<std::pair<std::string, const wire::Value*>> run;
    for (const auto& [tname, info] : states) {
      if (info.is_map() && PyStr(tname) != "changes" && info.Truthy() &&
          !info.Find("__run_num__")) {
        hstrs.insert(hstrs.begin(), Pprint(info, 1));
        hstrs.insert(hstrs.begin(),
                     "The State execution failed to record the order in which all states were "
                     "executed. The state return missing data is:");
      }
      if (info.is_map() && info.Find("result")) run.emplace_back(PyStr(tname), &info);
    }
    auto run_num = [](const wire::Value* v) {
      const wire::Value* n = v->Find("__run_num__");
      return n ? n->float64().value_or(0) : 0.0;
    };
    std::stable_sort(run.begin(), run.end(), [&](const auto& a, const auto& b) {
      return run_num(a.second) < run_num(b.second);
    });
    Counts counts;
    double rduration = 0;
    std::optional<double> max_pduration;
    for (const auto& [tname, info] : run) {
      wire::Value ret = *info;
      const wire::Value result = *ret.Find("result");
      const std::string rkey = PyStr(result);
      counts.by_result[rkey] += 1;
      if (auto d = ParseDuration(ret.Find("duration"))) {
        if (ret.Find("__parallel__")) {
          max_pduration = std::max(max_pduration.value_or(*d), *d);
        } else {
          rduration += *d;
        }
      }
      const wire::Value* changes = ret.Find("changes");
      if (changes == nullptr) return false;  // KeyError in Salt
      std::string tcolor = c_.green;
      bool schanged = false;
      std::string ctext;
      const std::string* name = ret.FindStr("name");
      if (name && (*name == "state.orch" || *name == "state.orchestrate" || *name == "state.sls")) {
        auto nested = HighstateFormatter(o_).Output(*changes, indent_level + 1);
        if (!nested) return false;
        const std::string pad(static_cast<std::size_t>(14 * indent_level), ' ');
        ctext = Replace(pad + "\n" + *nested, "\n", "\n" + pad);
        schanged = true;
        ++nchanges;
      } else {
        if (!FormatChanges(*changes, schanged, ctext)) return false;
        nchanges += schanged ? 1 : 0;
      }
      const bool ok = result.Truthy();
      if (o_.state_output_diff && ok && !schanged) continue;
      if (!o_.state_verbose && ok && !schanged) continue;
      if (schanged) tcolor = c_.cyan;
      if (result.boolean() == false) hcolor = tcolor = c_.red;
      if (result.is_nil()) hcolor = tcolor = c_.light_yellow;
      std::string mode = o_.state_output;
      std::transform(mode.begin(), mode.end(), mode.begin(),
                     [](unsigned char ch) { return static_cast<char>(std::tolower(ch)); });
      std::vector<std::string> comps = SplitOn(tname, "_|-");
      if (comps.size() < 4) return false;  // IndexError in Salt
      if (mode.size() >= 3 && mode.compare(mode.size() - 3, 3, "_id") == 0) comps[2] = comps[1];
      auto starts = [&](const char* p) { return mode.rfind(p, 0) == 0; };
      if (starts("terse") || (starts("mixed") && result.boolean() != false) ||
          (starts("changes") && ok && !schanged)) {
        hstrs.push_back(Terse(tcolor, comps, ret));
        continue;
      }
      if (!Full(tcolor, comps, ret, ctext, hstrs)) return false;
      if (const wire::Value* warnings = ret.Find("warnings")) {
        counts.by_result["warnings"] += 1;
        std::string joined;
        if (const wire::Array* a = warnings->array()) {
          for (std::size_t i = 0; i < a->size(); ++i) joined += (i ? "\n" : "") + PyStr((*a)[i]);
        } else {
          return false;
        }
        std::string wrapped = Wrap(joined);
        wrapped.erase(0, wrapped.find_first_not_of(' ') == std::string::npos
                             ? wrapped.size()
                             : wrapped.find_first_not_of(' '));
        hstrs.push_back("   " + C(c_.light_red, " Warnings: " + wrapped));
      }
    }
    Summary(host, counts, nchanges, rduration + max_pduration.value_or(0), hstrs);
    return true;
  }

  bool FormatChanges(const wire::Value& changes, bool& changed, std::string& ctext) {
    changed = false;
    ctext.clear();
    if (!changes.Truthy()) return true;
    changed = true;
    if (!changes.is_map()) {
      ctext = "Invalid Changes data: " + PyStr(changes);
      return true;
    }
    const wire::Value* ret = changes.Find("ret");
    const std::string* out = changes.FindStr("out");
    if (ret != nullptr && !ret->is_nil() && out != nullptr && *out == "highstate") {
      const wire::Map* hosts = ret->map();
      if (hosts == nullptr) return false;
      changed = false;
      for (const auto& [host, hostdata] : *hosts) {
        auto block = Host(PyStr(host), hostdata, 1);
        if (!block) return false;
        for (const auto& line : SplitLines(block->first))
          ctext += "\n" + std::string(14, ' ') + line;
        changed = changed || block->second;
      }
      return true;
    }
    ctext = "\n" + RStrip(Nested(changes, 14, o_.color, 0));
    return true;
  }

  std::string Terse(const std::string& tcolor, const std::vector<std::string>& comps,
                    const wire::Value& ret) const {
    std::string result = "Clean";
    const wire::Value* changes = ret.Find("changes");
    if (changes && changes->Truthy()) result = "Changed";
    const wire::Value& r = *ret.Find("result");
    if (r.boolean() == false) {
      result = "Failed";
    } else if (r.is_nil()) {
      result = "Differs";
    }
    std::string msg;
    if (const wire::Value* warnings = ret.Find("warnings")) {
      std::string joined;
      if (const wire::Array* a = warnings->array()) {
        for (std::size_t i = 0; i < a->size(); ++i) joined += (i ? "\n" : "") + PyStr((*a)[i]);
      }
      msg += c_.light_red + "Warnings:\n" + joined + c_.endc;
    }
    msg += " " + tcolor + " Name: " + comps[2] + " - Function: " + comps[0] + "." + comps.back() +
           " - Result: " + result;
    if (o_.state_output_profile && ret.Find("start_time")) {
      const wire::Value* duration = ret.Find("duration");
      msg += " - Started: " + PyStr(*ret.Find("start_time")) +
             " - Duration: " + (duration ? PyStr(*duration) : std::string()) + " ms";
    }
    return msg + c_.endc;
  }

  bool Full(const std::string& tcolor, const std::vector<std::string>& comps, wire::Value ret,
            const std::string& ctext, std::vector<std::string>& hstrs) const {
    const wire::Value* comment_v = ret.Find("comment");
    if (comment_v == nullptr) return false;  // KeyError in Salt
    std::string comment = Replace(Strip(PyStr(*comment_v)), "\n", "\n" + std::string(14, ' '));
    if (const wire::Value* data = ret.Find("data")) {
      if (const wire::Array* a = data->array()) {
        for (const auto& item : *a) comment += " " + PyStr(item);
      } else if (const wire::Map* m = data->map()) {
        for (const auto& [k, v] : *m) comment += "\n\t\t" + PyStr(k) + ": " + PyStr(v);
      } else {
        comment += " " + PyStr(*data);
      }
    }
    const bool profile = o_.state_output_profile && ret.Find("start_time");
    const std::string start_time = ret.Find("start_time") ? PyStr(*ret.Find("start_time")) : "";
    std::string duration = ret.Find("duration") ? PyStr(*ret.Find("duration")) : "";
    if (!duration.empty()) duration += " ms";
    const std::string& e = c_.endc;
    hstrs.push_back(tcolor + "----------" + e);
    hstrs.push_back("    " + tcolor + "      ID: " + comps[1] + e);
    hstrs.push_back("    " + tcolor + "Function: " + comps[0] + "." + comps[3] + e);
    if (comps[1] != comps[2]) hstrs.push_back("    " + tcolor + "    Name: " + comps[2] + e);
    hstrs.push_back("    " + tcolor + "  Result: " + PyStr(*ret.Find("result")) + e);
    hstrs.push_back("    " + tcolor + " Comment: " + comment + e);
    if (profile) {
      hstrs.push_back("    " + tcolor + " Started: " + start_time + e);
      hstrs.push_back("    " + tcolor + "Duration: " + duration + e);
    }
    hstrs.push_back(tcolor + "     Changes:   " + ctext + e);
    return true;
  }

  void Summary(const std::string& host, const Counts& counts, long nchanges, double total_ms,
               std::vector<std::string>& hstrs) const {
    std::size_t count_max_len = 0;
    for (const auto& [k, n] : counts.by_result) {
      count_max_len = std::max(count_max_len, std::to_string(n).size());
    }
    const int line_max_len = static_cast<int>(9 + count_max_len + 2);
    const std::string rule(static_cast<std::size_t>(line_max_len), '-');
    auto counted = [&](const std::string& label, const std::string& n) {
      return label + ": " + RightAlign(n, line_max_len - static_cast<int>(label.size() + 2));
    };
    hstrs.push_back(C(c_.cyan, "\nSummary for " + host + "\n" + rule));
    std::vector<std::string> stats;
    const long not_run = counts.Get("None");
    if (not_run > 0) stats.push_back(C(c_.light_yellow, "unchanged=" + std::to_string(not_run)));
    if (nchanges > 0) stats.push_back(C(c_.green, "changed=" + std::to_string(nchanges)));
    std::string changestats;
    for (std::size_t i = 0; i < stats.size(); ++i) changestats += (i ? ", " : "") + stats[i];
    if (!changestats.empty()) changestats = " (" + changestats + ")";
    hstrs.push_back(
        C(c_.green, counted("Succeeded", std::to_string(counts.Get("True") + not_run))) +
        changestats);
    const long failed = counts.Get("False");
    hstrs.push_back(C(failed ? c_.red : c_.cyan, counted("Failed", std::to_string(failed))));
    const long warnings = counts.Get("warnings");
    if (warnings) hstrs.push_back(C(c_.light_red, counted("Warnings", std::to_string(warnings))));
    long total = -warnings;
    for (const auto& [k, n] : counts.by_result) total += n;
    hstrs.push_back(C(c_.cyan, rule + "\nTotal states run: " +
                                   RightAlign(std::to_string(total), line_max_len - 7)));
    if (o_.state_output_profile) {
      std::string unit = "ms";
      if (total_ms > 999) {
        total_ms /= 1000;
        unit = "s";
      }
      char buf[64];
      std::snprintf(buf, sizeof buf, "%.3f", total_ms);
      hstrs.push_back(
          C(c_.cyan, "Total run time: " + RightAlign(buf, line_max_len - 5) + " " + unit));
    }
  }

 private:
  OutputOptions o_;
  Colors c_;
};

}  // namespace

std::optional<std::string> Highstate(const wire::Value& data, const OutputOptions& options) {
  return HighstateFormatter(options).Output(data, 1);
}

}  // namespace halite::client::internal
