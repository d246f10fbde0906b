// Bugs are not errors: HALITE_CHECK is always on and aborts with a message;
// HALITE_DCHECK runs in debug builds only. Use Result for anything the outside world causes.
#pragma once

#include <sstream>
#include <string_view>

namespace halite::internal {

class CheckFailure {
 public:
  CheckFailure(const char* file, int line, const char* condition);
  [[noreturn]] ~CheckFailure();
  template <typename T>
  CheckFailure& operator<<(const T& value) {
    stream_ << value;
    return *this;
  }

 private:
  std::ostringstream stream_;
};

// Swallows the stream in the not-failed branch so the macro is one expression.
struct CheckVoidify {
  void operator&(const CheckFailure&) {}
};

}  // namespace halite::internal

#define HALITE_CHECK(condition)                      \
  (condition) ? (void)0                              \
              : ::halite::internal::CheckVoidify() & \
                    ::halite::internal::CheckFailure(__FILE__, __LINE__, #condition)

#ifdef NDEBUG
#define HALITE_DCHECK(condition) \
  while (false) HALITE_CHECK(condition)
#else
#define HALITE_DCHECK(condition) HALITE_CHECK(condition)
#endif

// Clang thread-safety annotation; a no-op on GCC.
#if defined(__clang__)
#define HALITE_GUARDED_BY(x) __attribute__((guarded_by(x)))
#else
#define HALITE_GUARDED_BY(x)
#endif
