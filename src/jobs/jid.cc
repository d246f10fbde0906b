#include "halite/jobs/jid.h"

#include <algorithm>
#include <cstdio>
#include <ctime>

#include "halite/wire/encoding.h"

namespace halite::jobs {
namespace {

constexpr std::size_t kJidDigits = 20;
constexpr std::size_t kMaxJidSuffix = 64;

bool AllDigits(std::string_view text) {
  return std::all_of(text.begin(), text.end(), [](char c) { return c >= '0' && c <= '9'; });
}

std::string FormatMicros(std::int64_t micros) {
  // Floor division, so that times before the epoch still format (not that jids need them).
  std::int64_t seconds = micros / 1'000'000;
  std::int64_t fraction = micros % 1'000'000;
  if (fraction < 0) {
    fraction += 1'000'000;
    --seconds;
  }
  const std::time_t t = static_cast<std::time_t>(seconds);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[64];
  std::snprintf(buf, sizeof(buf), "%04d%02d%02d%02d%02d%02d%06lld", tm.tm_year + 1900,
                tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec,
                static_cast<long long>(fraction));
  return buf;
}

std::int64_t MicrosSinceEpoch(std::chrono::system_clock::time_point time) {
  return std::chrono::floor<std::chrono::microseconds>(time.time_since_epoch()).count();
}

}  // namespace

std::string GenerateJid(std::chrono::system_clock::time_point time) {
  return FormatMicros(MicrosSinceEpoch(time));
}

bool IsJid(std::string_view jid) {
  if (jid.size() < kJidDigits || !AllDigits(jid.substr(0, kJidDigits))) return false;
  if (jid.size() == kJidDigits) return true;
  const std::string_view suffix = jid.substr(kJidDigits + 1);
  return jid[kJidDigits] == '_' && !suffix.empty() && suffix.size() <= kMaxJidSuffix &&
         std::all_of(suffix.begin(), suffix.end(), [](char c) {
           return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
                  c == '.' || c == '_' || c == '-';
         });
}

std::string JidToStartTime(std::string_view jid) {
  static constexpr const char* kMonths[] = {"Jan", "Feb", "Mar", "Apr", "May", "Jun",
                                            "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"};
  if (!IsJid(jid)) return "";
  const int month = (jid[4] - '0') * 10 + (jid[5] - '0');
  if (month < 1 || month > 12) return "";
  std::string out;
  out.reserve(32);
  out.append(jid.substr(0, 4)).append(", ").append(kMonths[month - 1]).append(" ");
  out.append(jid.substr(6, 2)).append(" ");
  out.append(jid.substr(8, 2)).append(":");
  out.append(jid.substr(10, 2)).append(":");
  out.append(jid.substr(12, 2)).append(".");
  out.append(jid.substr(14, 6));
  return out;
}

std::string JidDir(std::string_view jid) {
  const std::string hash = wire::Sha256Hex(jid);
  return "jobs/" + hash.substr(0, 2) + "/" + hash.substr(2);
}

std::string JidGenerator::NextAt(std::chrono::system_clock::time_point now) {
  std::int64_t micros = MicrosSinceEpoch(now);
  {
    std::lock_guard<std::mutex> lock(mu_);
    micros = std::max(micros, last_micros_ + 1);
    last_micros_ = micros;
  }
  std::string jid = FormatMicros(micros);
  if (!suffix_.empty()) jid.append("_").append(suffix_);
  return jid;
}

}  // namespace halite::jobs
