// Status and StatusOr: expected failures (bad input, I/O, corruption) as values.
// A failed Status carries one line of text that names the file and the problem,
// e.g. "models/x/config.json: missing field 'hidden_size'". Programmer errors are
// checks (IMPRESS_CHECK), not Status.
#pragma once

#include <cstdio>
#include <cstdlib>
#include <optional>
#include <string>
#include <utility>

namespace impress {

class Status {
 public:
  Status() = default;  // OK
  static Status OK() { return Status(); }
  static Status Error(std::string message) { return Status(std::move(message)); }

  bool ok() const { return !message_.has_value(); }
  const std::string& message() const {
    static const std::string kOk = "OK";
    return ok() ? kOk : *message_;
  }
  // Returns this error with "context: " in front; OK stays OK.
  Status WithContext(const std::string& context) const {
    return ok() ? *this : Status(context + ": " + *message_);
  }

 private:
  explicit Status(std::string message) : message_(std::move(message)) {}
  std::optional<std::string> message_;
};

template <typename T>
class StatusOr {
 public:
  StatusOr(Status status) : status_(std::move(status)) {  // NOLINT: implicit by design
    if (status_.ok()) status_ = Status::Error("StatusOr built from an OK Status without a value");
  }
  StatusOr(T value) : value_(std::move(value)) {}  // NOLINT: implicit by design

  bool ok() const { return status_.ok(); }
  const Status& status() const { return status_; }
  // REQUIRES: ok()
  T& value() & { return *value_; }
  const T& value() const& { return *value_; }
  T&& value() && { return std::move(*value_); }
  T* operator->() { return &*value_; }
  const T* operator->() const { return &*value_; }
  T& operator*() & { return *value_; }
  const T& operator*() const& { return *value_; }
  T&& operator*() && { return std::move(*value_); }

 private:
  Status status_;
  std::optional<T> value_;
};

[[noreturn]] inline void CheckFailed(const char* expr, const char* file, int line) {
  std::fprintf(stderr, "internal error: check failed: %s at %s:%d\n", expr, file, line);
  std::abort();
}

}  // namespace impress

#define IMPRESS_CHECK(cond) \
  do { if (!(cond)) ::impress::CheckFailed(#cond, __FILE__, __LINE__); } while (0)

#define IMPRESS_CONCAT_INNER(a, b) a##b
#define IMPRESS_CONCAT(a, b) IMPRESS_CONCAT_INNER(a, b)

// Returns from the enclosing function when `expr` (a Status) is not OK.
#define RETURN_IF_ERROR(expr)                        \
  do {                                               \
    ::impress::Status _st = (expr);                  \
    if (!_st.ok()) return _st;                       \
  } while (0)

// `ASSIGN_OR_RETURN(auto x, f())`: binds the value or returns the error.
#define ASSIGN_OR_RETURN(lhs, expr) \
  ASSIGN_OR_RETURN_IMPL(IMPRESS_CONCAT(_so_, __LINE__), lhs, expr)
#define ASSIGN_OR_RETURN_IMPL(tmp, lhs, expr) \
  auto tmp = (expr);                          \
  if (!tmp.ok()) return tmp.status();         \
  lhs = std::move(tmp).value()
