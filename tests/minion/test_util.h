// Helpers shared by the minion tests: vector files, JSON -> Value, waiting with deadlines.
#pragma once

#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <functional>
#include <future>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <thread>

#include "halite/transport/zmq_loop.h"
#include "halite/wire/encoding.h"
#include "halite/wire/msgpack.h"

namespace halite::minion::testing {

using Json = nlohmann::ordered_json;

inline std::string ReadTestFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  EXPECT_TRUE(in.good()) << path;
  std::stringstream buffer;
  buffer << in.rdbuf();
  return buffer.str();
}

inline std::string VectorPath(const std::string& name) {
  return std::string(HALITE_TEST_DATA_DIR) + "/vectors/" + name;
}

inline Json LoadVectors(const std::string& name) {
  return Json::parse(ReadTestFile(VectorPath(name)));
}

inline std::string Unhex(const Json& j) { return wire::HexDecode(j.get<std::string>()).value(); }

// The JSON rendering of the vectors back to a Value: {"hex": ...} is a byte string.
inline wire::Value ToValue(const Json& j) {
  if (j.is_null()) return wire::Value();
  if (j.is_boolean()) return wire::Value(j.get<bool>());
  if (j.is_number_integer()) return wire::Value(j.get<std::int64_t>());
  if (j.is_number_float()) return wire::Value(j.get<double>());
  if (j.is_string()) return wire::Value(j.get<std::string>());
  if (j.is_array()) {
    wire::Array a;
    for (const auto& e : j) a.push_back(ToValue(e));
    return wire::Value(std::move(a));
  }
  if (j.size() == 1 && j.contains("hex") && j["hex"].is_string()) {
    return wire::Value::Bin(Unhex(j["hex"]));
  }
  wire::Value m = wire::Value::EmptyMap();
  for (auto it = j.begin(); it != j.end(); ++it) m.Set(it.key(), ToValue(it.value()));
  return m;
}

// Values compare by their wire encoding (int widths and str/bin flavours do not matter).
inline std::string Wire(const wire::Value& v) { return wire::HexEncode(wire::Pack(v)); }

// Polls `pred` until it holds or `timeout` passes. Returns the last result.
inline bool WaitFor(const std::function<bool()>& pred,
                    std::chrono::milliseconds timeout = std::chrono::seconds(20)) {
  auto deadline = std::chrono::steady_clock::now() + timeout;
  while (!pred()) {
    if (std::chrono::steady_clock::now() >= deadline) return pred();
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return true;
}

// Runs fn on the loop thread and returns its result.
template <typename Fn>
auto OnLoop(transport::ZmqLoop& loop, Fn fn) -> decltype(fn()) {
  using R = decltype(fn());
  std::promise<R> done;
  loop.Post([&] {
    if constexpr (std::is_void_v<R>) {
      fn();
      done.set_value();
    } else {
      done.set_value(fn());
    }
  });
  return done.get_future().get();
}

class TempDir {
 public:
  TempDir() {
    std::string templ = (std::filesystem::temp_directory_path() / "halite-minion-XXXXXX").string();
    path_ = mkdtemp(templ.data());
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
};

}  // namespace halite::minion::testing
