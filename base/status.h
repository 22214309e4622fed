// Status and StatusOr: how errors cross module boundaries in parex.
//
// A Status is either OK or carries a code from a small closed set and a
// message that names what failed (file, op, variable, place). Functions that
// can fail return Status or StatusOr<T>; broken internal invariants use
// PAREX_CHECK (base/check.h) instead.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <utility>

#include "base/check.h"

namespace parex {

enum class StatusCode {
  kOk = 0,
  kInvalidArgument,  // bad input from the user: program, attribute, feed
  kNotFound,         // a named thing does not exist: file, var, op, kernel
  kOutOfRange,       // index or size outside what is allowed
  kUnimplemented,    // a valid request parex does not support yet
  kFailedPrecondition,
  kDataLoss,           // a file is truncated or corrupt
  kIoError,            // the OS refused: open, read, write
  kResourceExhausted,  // an allocation failed or would exceed a limit
  kAborted,            // a step abandoned on request (a peer gone, a deadline)
  kInternal,
};

const char* StatusCodeName(StatusCode code);

class [[nodiscard]] Status {
 public:
  Status() = default;
  Status(StatusCode code, std::string message)
      : code_(code), message_(std::move(message)) {}

  static Status Ok() { return Status(); }

  bool ok() const { return code_ == StatusCode::kOk; }
  StatusCode code() const { return code_; }
  const std::string& message() const { return message_; }
  // "InvalidArgument: <message>"
  std::string ToString() const;

  // Returns a copy whose message is "<context>: <message>"; OK stays OK.
  Status WithContext(std::string_view context) const;

 private:
  StatusCode code_ = StatusCode::kOk;
  std::string message_;
};

inline Status InvalidArgument(std::string m) {
  return Status(StatusCode::kInvalidArgument, std::move(m));
}
inline Status NotFound(std::string m) {
  return Status(StatusCode::kNotFound, std::move(m));
}
inline Status OutOfRange(std::string m) {
  return Status(StatusCode::kOutOfRange, std::move(m));
}
inline Status Unimplemented(std::string m) {
  return Status(StatusCode::kUnimplemented, std::move(m));
}
inline Status FailedPrecondition(std::string m) {
  return Status(StatusCode::kFailedPrecondition, std::move(m));
}
inline Status DataLoss(std::string m) {
  return Status(StatusCode::kDataLoss, std::move(m));
}
inline Status IoError(std::string m) {
  return Status(StatusCode::kIoError, std::move(m));
}
inline Status ResourceExhausted(std::string m) {
  return Status(StatusCode::kResourceExhausted, std::move(m));
}
inline Status Aborted(std::string m) {
  return Status(StatusCode::kAborted, std::move(m));
}
inline Status Internal(std::string m) {
  return Status(StatusCode::kInternal, std::move(m));
}

// Holds either a value or a non-OK Status.
template <typename T>
class [[nodiscard]] StatusOr {
 public:
  StatusOr(const Status& status) : status_(status) {  // NOLINT: implicit
    PAREX_CHECK(!status_.ok(), "StatusOr built from an OK status");
  }
  StatusOr(T value) : value_(std::move(value)) {}  // NOLINT: implicit

  bool ok() const { return status_.ok(); }
  const Status& status() const { return status_; }

  // REQUIRES: ok()
  T& value() & {
    PAREX_CHECK(ok(), status_.ToString());
    return *value_;
  }
  const T& value() const& {
    PAREX_CHECK(ok(), status_.ToString());
    return *value_;
  }
  T&& value() && {
    PAREX_CHECK(ok(), status_.ToString());
    return std::move(*value_);
  }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }

 private:
  Status status_;
  std::optional<T> value_;
};

}  // namespace parex

#define PAREX_STATUS_CONCAT_INNER(a, b) a##b
#define PAREX_STATUS_CONCAT(a, b) PAREX_STATUS_CONCAT_INNER(a, b)

// Returns from the enclosing function when `expr` yields a non-OK Status.
#define PAREX_RETURN_IF_ERROR(expr)                \
  do {                                             \
    ::parex::Status parex_status_ = (expr);        \
    if (!parex_status_.ok()) return parex_status_; \
  } while (0)

// `lhs = value of expr` or return its error. lhs may declare a variable.
#define PAREX_ASSIGN_OR_RETURN(lhs, expr)                                    \
  PAREX_ASSIGN_OR_RETURN_IMPL(PAREX_STATUS_CONCAT(parex_or_, __LINE__), lhs, \
                              expr)
#define PAREX_ASSIGN_OR_RETURN_IMPL(tmp, lhs, expr) \
  auto tmp = (expr);                                \
  if (!tmp.ok()) return tmp.status();               \
  lhs = std::move(tmp).value()
