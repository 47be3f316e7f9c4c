// A request owned by the test, viewed as the core sees it.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "gateway/model/request_view.h"

namespace idem::gateway::testing {

struct TestRequest {
  std::string method = "POST";
  std::string target = "/";
  std::vector<std::pair<std::string, std::string>> headers;
  std::string body;

  TestRequest& header(std::string name, std::string value) {
    headers.emplace_back(std::move(name), std::move(value));
    return *this;
  }
  TestRequest& json(std::string text) {
    body = std::move(text);
    return header("Content-Type", "application/json");
  }

  // Valid until this TestRequest changes.
  const RequestView& view() {
    fields_.clear();
    for (const auto& [n, v] : headers) fields_.push_back({n, v});
    view_ = {method, target, fields_, body};
    return view_;
  }

 private:
  std::vector<HeaderField> fields_;
  RequestView view_;
};

}  // namespace idem::gateway::testing
