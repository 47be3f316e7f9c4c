// Errors as values at module boundaries.
//
// A Status says what the caller should do next, not which driver call failed:
//   unavailable        the call was not applied (never sent, refused, or the store proved
//                      that it did nothing); retrying this call is safe.
//   deadline_exceeded  the call was sent and no answer came: it may or may not have taken
//                      effect, the outcome is unknown. Never treat it as "not done"
//                      (docs/stores.md says what to read before going on).
//   failed_precondition the state must be fixed first (e.g. a read-only database file).
//   invalid_argument   the request itself is wrong (bad URI, empty key, zero lease).
//   internal           a bug or an unexpected condition; the message says which.
#pragma once

#include <cassert>
#include <string>
#include <utility>
#include <variant>

namespace idem {

enum class StatusCode {
  ok,
  invalid_argument,
  unavailable,
  deadline_exceeded,
  failed_precondition,
  internal,
};

// "ok", "invalid_argument", ... as written above.
const char* to_string(StatusCode code) noexcept;

class [[nodiscard]] Status {
 public:
  Status() = default;  // ok
  Status(StatusCode code, std::string message) : code_(code), message_(std::move(message)) {}

  static Status ok() { return {}; }

  bool is_ok() const noexcept { return code_ == StatusCode::ok; }
  explicit operator bool() const noexcept { return is_ok(); }
  StatusCode code() const noexcept { return code_; }
  const std::string& message() const noexcept { return message_; }

  // "unavailable: sqlite: database is locked"
  std::string to_string() const;

  friend bool operator==(const Status& a, const Status& b) noexcept { return a.code_ == b.code_; }

 private:
  StatusCode code_ = StatusCode::ok;
  std::string message_;
};

inline Status invalid_argument(std::string m) { return {StatusCode::invalid_argument, std::move(m)}; }
inline Status unavailable(std::string m) { return {StatusCode::unavailable, std::move(m)}; }
inline Status deadline_exceeded(std::string m) { return {StatusCode::deadline_exceeded, std::move(m)}; }
inline Status failed_precondition(std::string m) { return {StatusCode::failed_precondition, std::move(m)}; }
inline Status internal_error(std::string m) { return {StatusCode::internal, std::move(m)}; }

// A value or the Status that explains its absence. Constructing a Result from an ok
// Status is a programming error.
template <class T>
class [[nodiscard]] Result {
 public:
  Result(T value) : v_(std::in_place_index<0>, std::move(value)) {}
  Result(Status status) : v_(std::in_place_index<1>, std::move(status)) {
    assert(!std::get<1>(v_).is_ok() && "Result built from an ok Status");
  }

  bool is_ok() const noexcept { return v_.index() == 0; }
  explicit operator bool() const noexcept { return is_ok(); }

  T& value() & { return std::get<0>(v_); }
  const T& value() const& { return std::get<0>(v_); }
  T&& value() && { return std::get<0>(std::move(v_)); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }

  // The error; Status::ok() when this holds a value.
  Status status() const { return is_ok() ? Status::ok() : std::get<1>(v_); }

 private:
  std::variant<T, Status> v_;
};

// For operations that return nothing but may fail.
struct Done {
  friend bool operator==(Done, Done) { return true; }
};

}  // namespace idem
