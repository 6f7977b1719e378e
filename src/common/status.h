// Status and StatusOr: expected failures (bad input, I/O, corruption) as values,
// LevelDB's Status in spirit. A failed Status has a kind (StatusCode), which
// callers branch on, and one line of text that names the file and the
// problem, e.g. "models/x/config.json: missing field 'hidden_size'", which
// is what a user sees. Programmer errors are checks (IMPRESS_CHECK), not Status.
#pragma once

#include <cstdio>
#include <cstdlib>
#include <optional>
#include <string>
#include <utility>

namespace impress {

// What kind of failure a Status is; callers branch on the kind, people read the message.
enum class StatusCode {
  kOk,
  kInvalidArgument,  // bad input from the user: a flag, a model or data file that is not what it must be
  kNotFound,         // a thing asked for is not there: a store, a chunk, a file
  kCorruption,       // data this project stored is damaged: a failed checksum, a malformed record
  kIOError,          // the operating system refused: open, read, write, sync, lock, space
  kInternal,         // a broken invariant that reached a Status instead of a check
};

class Status {
 public:
  Status() = default;  // OK
  static Status OK() { return Status(); }
  static Status InvalidArgument(std::string message) { return Status(StatusCode::kInvalidArgument, std::move(message)); }
  static Status NotFound(std::string message) { return Status(StatusCode::kNotFound, std::move(message)); }
  static Status Corruption(std::string message) { return Status(StatusCode::kCorruption, std::move(message)); }
  static Status IOError(std::string message) { return Status(StatusCode::kIOError, std::move(message)); }
  static Status Internal(std::string message) { return Status(StatusCode::kInternal, std::move(message)); }

  bool ok() const { return code_ == StatusCode::kOk; }
  StatusCode code() const { return code_; }
  bool IsInvalidArgument() const { return code_ == StatusCode::kInvalidArgument; }
  bool IsNotFound() const { return code_ == StatusCode::kNotFound; }
  bool IsCorruption() const { return code_ == StatusCode::kCorruption; }
  bool IsIOError() const { return code_ == StatusCode::kIOError; }
  const std::string& message() const {
    static const std::string kOk = "OK";
    return ok() ? kOk : message_;
  }
  // Returns this error with "context: " in front, of the same kind; OK stays OK.
  Status WithContext(const std::string& context) const {
    return ok() ? *this : Status(code_, context + ": " + message_);
  }

 private:
  Status(StatusCode code, std::string message) : code_(code), message_(std::move(message)) {}
  StatusCode code_ = StatusCode::kOk;
  std::string message_;
};

template <typename T>
class StatusOr {
 public:
  StatusOr(Status status) : status_(std::move(status)) {  // NOLINT: implicit by design
    if (status_.ok()) status_ = Status::Internal("StatusOr built from an OK Status without a value");
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
