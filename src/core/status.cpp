#include "idem/status.h"

namespace idem {

const char* to_string(StatusCode code) noexcept {
  switch (code) {
    case StatusCode::ok:
      return "ok";
    case StatusCode::invalid_argument:
      return "invalid_argument";
    case StatusCode::unavailable:
      return "unavailable";
    case StatusCode::deadline_exceeded:
      return "deadline_exceeded";
    case StatusCode::failed_precondition:
      return "failed_precondition";
    case StatusCode::internal:
      return "internal";
  }
  return "unknown";
}

std::string Status::to_string() const {
  std::string out = idem::to_string(code_);
  if (!message_.empty()) {
    out += ": ";
    out += message_;
  }
  return out;
}

}  // namespace idem
