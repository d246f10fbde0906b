// Errors as values. Any failure caused by the outside world (network bytes, auth, disk,
// database, config) is returned as Result<T> / Status; bugs crash through HALITE_CHECK.
// The API is a subset of std::expected so that a later switch is an alias change.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <variant>

#include "halite/common/check.h"

namespace halite {

enum class ErrorCode : std::uint8_t {
  kInvalidArgument,     // malformed input: bytes, config values, ids
  kNotFound,            // a key, job or file that does not exist
  kAlreadyExists,       // create of something that is there
  kPermissionDenied,    // file modes, ACLs
  kUnauthenticated,     // bad HMAC, bad signature, unknown key
  kFailedPrecondition,  // state does not allow the call (key pending, rejected, ...)
  kResourceExhausted,   // limits: sizes, depth, queues
  kUnavailable,         // a peer, server or disk that cannot be reached right now
  kDeadlineExceeded,    // timeouts
  kDataLoss,            // corrupt stored data
  kInternal,            // a library failed in a way we did not expect
};

std::string_view ErrorCodeName(ErrorCode code);

struct [[nodiscard]] Error {
  ErrorCode code = ErrorCode::kInternal;
  std::string message;

  static Error InvalidArgument(std::string m) {
    return {ErrorCode::kInvalidArgument, std::move(m)};
  }
  static Error NotFound(std::string m) { return {ErrorCode::kNotFound, std::move(m)}; }
  static Error AlreadyExists(std::string m) { return {ErrorCode::kAlreadyExists, std::move(m)}; }
  static Error PermissionDenied(std::string m) {
    return {ErrorCode::kPermissionDenied, std::move(m)};
  }
  static Error Unauthenticated(std::string m) {
    return {ErrorCode::kUnauthenticated, std::move(m)};
  }
  static Error FailedPrecondition(std::string m) {
    return {ErrorCode::kFailedPrecondition, std::move(m)};
  }
  static Error ResourceExhausted(std::string m) {
    return {ErrorCode::kResourceExhausted, std::move(m)};
  }
  static Error Unavailable(std::string m) { return {ErrorCode::kUnavailable, std::move(m)}; }
  static Error DeadlineExceeded(std::string m) {
    return {ErrorCode::kDeadlineExceeded, std::move(m)};
  }
  static Error DataLoss(std::string m) { return {ErrorCode::kDataLoss, std::move(m)}; }
  static Error Internal(std::string m) { return {ErrorCode::kInternal, std::move(m)}; }

  // "NOT_FOUND: message"
  std::string ToString() const;
  // Returns a copy with "context: " prepended to the message.
  Error WithContext(std::string_view context) const;
};

// Result<T> holds a T or an Error. Result<void> (= Status) holds nothing or an Error.
template <typename T>
class [[nodiscard]] Result {
 public:
  using value_type = T;
  Result(const T& value) : data_(std::in_place_index<0>, value) {}          // NOLINT: implicit
  Result(T&& value) : data_(std::in_place_index<0>, std::move(value)) {}    // NOLINT: implicit
  Result(Error error) : data_(std::in_place_index<1>, std::move(error)) {}  // NOLINT: implicit
  template <typename U>
  requires(std::is_constructible_v<T, U&&> && !std::is_same_v<std::decay_t<U>, T> &&
           !std::is_same_v<std::decay_t<U>, Error> && !std::is_same_v<std::decay_t<U>, Result<T>>)
      Result(U&& value)
      : data_(std::in_place_index<0>, T(std::forward<U>(value))) {}  // NOLINT

  bool ok() const { return data_.index() == 0; }
  bool has_value() const { return ok(); }
  explicit operator bool() const { return ok(); }

  T& value() & {
    HALITE_CHECK(ok()) << "value() on error: " << std::get<1>(data_).ToString();
    return std::get<0>(data_);
  }
  const T& value() const& {
    HALITE_CHECK(ok()) << "value() on error: " << std::get<1>(data_).ToString();
    return std::get<0>(data_);
  }
  T&& value() && {
    HALITE_CHECK(ok()) << "value() on error: " << std::get<1>(data_).ToString();
    return std::get<0>(std::move(data_));
  }
  const Error& error() const& {
    HALITE_CHECK(!ok()) << "error() on a value";
    return std::get<1>(data_);
  }
  Error&& error() && {
    HALITE_CHECK(!ok()) << "error() on a value";
    return std::get<1>(std::move(data_));
  }
  T value_or(T fallback) const& { return ok() ? std::get<0>(data_) : std::move(fallback); }

  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }
  T&& operator*() && { return std::move(*this).value(); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }

 private:
  std::variant<T, Error> data_;
};

template <>
class [[nodiscard]] Result<void> {
 public:
  Result() = default;
  Result(Error error) : error_(std::move(error)) {}  // NOLINT: implicit

  bool ok() const { return !error_.has_value(); }
  bool has_value() const { return ok(); }
  explicit operator bool() const { return ok(); }
  void value() const { HALITE_CHECK(ok()) << "value() on error: " << error_->ToString(); }
  const Error& error() const& {
    HALITE_CHECK(!ok()) << "error() on ok status";
    return *error_;
  }
  Error&& error() && {
    HALITE_CHECK(!ok()) << "error() on ok status";
    return std::move(*error_);
  }

 private:
  std::optional<Error> error_;
};

using Status = Result<void>;

inline Status OkStatus() { return Status(); }

}  // namespace halite

#define HALITE_CONCAT_INNER_(a, b) a##b
#define HALITE_CONCAT_(a, b) HALITE_CONCAT_INNER_(a, b)

// Returns the error of a Result/Status expression from the enclosing function.
#define HALITE_RETURN_IF_ERROR(expr)                                    \
  do {                                                                  \
    auto&& halite_status_ = (expr);                                     \
    if (!halite_status_.ok()) return std::move(halite_status_).error(); \
  } while (0)

// HALITE_ASSIGN_OR_RETURN(auto x, F()): declares x from F()'s value or returns its error.
#define HALITE_ASSIGN_OR_RETURN(lhs, expr) \
  HALITE_ASSIGN_OR_RETURN_IMPL_(HALITE_CONCAT_(halite_result_, __LINE__), lhs, expr)
#define HALITE_ASSIGN_OR_RETURN_IMPL_(tmp, lhs, expr) \
  auto tmp = (expr);                                  \
  if (!tmp.ok()) return std::move(tmp).error();       \
  lhs = std::move(tmp).value()
