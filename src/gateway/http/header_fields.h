// The one adapter from a Beast request head to the model's view of it (model/request_view.h): the
// HTTP layer, the pipeline and the admin listener read header fields through it, so no
// model file needs Beast.
#pragma once

#include <cstddef>
#include <iterator>
#include <vector>

#include <boost/beast/http/fields.hpp>
#include <boost/beast/http/message.hpp>

#include "gateway/model/request_view.h"

namespace idem::gateway {

// The fields of `req` in arrival order, as views into it: valid while `req` lives and is
// not modified.
inline std::vector<HeaderField> header_fields(const boost::beast::http::request_header<>& req) {
  std::vector<HeaderField> out;
  out.reserve(static_cast<std::size_t>(std::distance(req.begin(), req.end())));  // one allocation
  for (const auto& f : req) out.push_back({f.name_string(), f.value()});
  return out;
}

}  // namespace idem::gateway
