#include "gateway/model/request_view.h"

#include "util/ascii.h"
#include "util/percent.h"

namespace idem::gateway {

std::string_view target_path(std::string_view target) noexcept { return target.substr(0, target.find('?')); }

std::string_view target_query(std::string_view target) noexcept {
  std::size_t q = target.find('?');
  return q == std::string_view::npos ? std::string_view() : target.substr(q + 1);
}

std::size_t count_headers(std::span<const HeaderField> headers, std::string_view name) noexcept {
  std::size_t n = 0;
  for (const HeaderField& h : headers) n += util::iequals(h.name, name) ? 1 : 0;
  return n;
}

std::optional<std::string> find_header(std::span<const HeaderField> headers, std::string_view name) {
  std::optional<std::string> value;
  for (const HeaderField& h : headers) {
    if (!util::iequals(h.name, name)) continue;
    if (value) {
      *value += ", ";
      *value += h.value;
    } else {
      value.emplace(h.value);
    }
  }
  return value;
}

namespace {

using util::BadPercent, util::Plus;

// Calls fn(pair) for each non-empty pair of `encoded`, split at any of `separators`.
template <class Fn>
void for_each_pair(std::string_view encoded, std::string_view separators, Fn&& fn) {
  while (!encoded.empty()) {
    const std::size_t end = encoded.find_first_of(separators);
    const std::string_view pair = encoded.substr(0, end);
    encoded = end == std::string_view::npos ? std::string_view() : encoded.substr(end + 1);
    if (!pair.empty() && !fn(pair)) return;
  }
}

bool pair_named(std::string_view pair, std::string_view name) {
  return *util::percent_decode(pair.substr(0, pair.find('=')), BadPercent::keep, Plus::space) == name;
}

// The decoded value of a pair ("" without '=').
std::string pair_value(std::string_view pair) {
  const std::size_t eq = pair.find('=');
  return eq == std::string_view::npos
             ? std::string()
             : *util::percent_decode(pair.substr(eq + 1), BadPercent::keep, Plus::space);
}

}  // namespace

std::optional<std::string> find_form_value(std::string_view encoded, std::string_view name) {
  std::optional<std::string> value;
  for_each_pair(encoded, "&", [&](std::string_view pair) {
    if (!pair_named(pair, name)) return true;
    value = pair_value(pair);
    return false;
  });
  return value;
}

std::vector<std::string> form_values(std::string_view encoded, std::string_view name) {
  std::vector<std::string> out;
  for_each_pair(encoded, "&;", [&](std::string_view pair) {
    if (pair_named(pair, name)) out.push_back(pair_value(pair));
    return true;
  });
  return out;
}

FormOccurrences form_occurrences(std::string_view encoded, std::string_view name) {
  FormOccurrences out;
  for_each_pair(encoded, "&", [&](std::string_view pair) {
    if (pair_named(pair, name) && pair.find(';') != std::string_view::npos) out.semicolon = true;
    for_each_pair(pair, ";", [&](std::string_view piece) {
      out.count += pair_named(piece, name) ? 1 : 0;
      return true;
    });
    return true;
  });
  return out;
}

bool has_media_type(std::string_view content_type, std::string_view media_type) noexcept {
  std::string_view media = content_type.substr(0, content_type.find(';'));
  while (!media.empty() && (media.back() == ' ' || media.back() == '\t')) media.remove_suffix(1);
  while (!media.empty() && (media.front() == ' ' || media.front() == '\t')) media.remove_prefix(1);
  return util::iequals(media, media_type);
}

bool is_form_content_type(std::string_view content_type) noexcept {
  return has_media_type(content_type, "application/x-www-form-urlencoded");
}

const ExactJson* RequestContext::json_body() {
  if (!json_) json_.emplace(parse_exact_json(request_.body));
  return json_->is_ok() ? &json_->value() : nullptr;
}

std::string RequestContext::json_error() {
  if (json_body() != nullptr) return {};
  return json_->status().message();
}

}  // namespace idem::gateway
