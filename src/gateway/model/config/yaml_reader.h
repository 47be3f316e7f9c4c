// Checked access to a YAML document for the config loader: every value is read through a
// YamlReader, which throws ConfigError naming the file, the 1-based line and the dotted key
// ("idem.yaml:12: routes[1].match.path: ...") when the value is missing, of the wrong type
// or out of range, and refuses unknown and repeated keys in every mapping. Internal to the
// config code; no global state.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <yaml-cpp/yaml.h>

#include "gateway/model/config/config.h"
#include "idem/clock.h"

namespace idem::gateway {

using Names = std::vector<std::string_view>;

// Where a setting was written: line (1-based, 0 when unknown) and dotted key path.
struct Where {
  int line = 0;
  std::string path;
};

// One `key: value` of a mapping, or one item of a list (then `key` is the list's key).
struct Entry {
  YAML::Node key;
  YAML::Node value;
  std::string path;  // "routes[1].match.path", "defaults.fingerprint[0]"
};

int line_of(const YAML::Node& n);
Where where(const Entry& e);  // the value's line (the key's, for an empty value)

// "a, b, c".
std::string join(const Names& names);

class YamlReader {
 public:
  YamlReader(std::string source, const ConfigEnvironment& env) : source_(std::move(source)), env_(env) {}

  // The root of `text`, a YAML stream of one document (empty documents after it are
  // allowed); an empty stream gives a null node. Fails with "invalid YAML: ..." and the
  // line for syntax errors, and for a second document that is not empty. Terminates for
  // every input (yaml-cpp 0.7's LoadAll does not: jbeder/yaml-cpp#1040).
  YAML::Node parse_document(std::string_view text) const;

  const std::string& source() const noexcept { return source_; }  // the file name in messages

  [[noreturn]] void fail(const Where& w, const std::string& reason) const;
  [[noreturn]] void fail(const Entry& e, const std::string& reason) const { fail(where(e), reason); }

  // The entries of `map` (an empty mapping or no value at all give none), in document
  // order. Fails when `map` is not a mapping, or a key is not a plain name, not among
  // `allowed` (when `allowed` is empty, any name is), or repeated.
  std::vector<Entry> entries(const YAML::Node& map, const Where& at, const std::vector<Names>& allowed) const;
  // The items of a list value; fails when it is not a list. An empty list gives none.
  std::vector<Entry> items(const Entry& list) const;

  static const Entry* find(const std::vector<Entry>& es, std::string_view name);
  // The entry named `name`; fails with "required" at `parent` otherwise.
  const Entry& require(const std::vector<Entry>& es, std::string_view name, const Where& parent) const;

  // The scalar text with `${NAME}` replaced (load_config_text); fails for an empty value, a
  // list or a mapping. `expected` describes what belongs there ("a duration such as 30s").
  std::string scalar(const Entry& e, const char* expected) const;
  // scalar(), or nullopt when a `${NAME}` in it is unset under a lenient environment (the
  // warning is then given): the value is not what the running gateway would read, so it is
  // not validated (`idem check` without --strict; docs/configuration.md, "Secrets from the
  // environment").
  std::optional<std::string> scalar_if_set(const Entry& e, const char* expected) const;
  // The scalar of `e` with unset variables read as empty and no second warning (after
  // scalar_if_set gave nullopt).
  std::string expanded_leniently(const Entry& e) const;
  // The variable `name`, for the setting at `e`: unset is an error, or under a lenient
  // environment a warning and nullopt.
  std::optional<std::string> variable(const Entry& e, const std::string& name) const;
  // parse_duration, then at least `min` (else fails with `rule`).
  Duration duration(const Entry& e, Duration min, const char* rule) const;
  std::uint64_t size(const Entry& e) const;  // parse_size
  // A whole number from `min` to `max` (decimal digits only); fails naming the range.
  std::uint64_t count(const Entry& e, std::uint64_t min, std::uint64_t max) const;
  bool boolean(const Entry& e) const;  // true/True/TRUE, false/False/FALSE (YAML 1.2 core)
  // The index of the scalar among `names`; fails naming them otherwise.
  std::size_t choice(const Entry& e, const Names& names) const;

 private:
  // `unset`, when given, is set to true when a variable was unset (lenient environment).
  std::string expand(const Entry& e, const std::string& text, bool* unset = nullptr) const;

  std::string source_;
  const ConfigEnvironment& env_;
};

}  // namespace idem::gateway
