#include "gateway/model/config/yaml_reader.h"

#include <charconv>

#include <sstream>
#include <unordered_map>

#include <yaml-cpp/eventhandler.h>

#include "gateway/model/config/config.h"
#include "gateway/model/units.h"

namespace idem::gateway {

int line_of(const YAML::Node& n) {
  YAML::Mark m = n.Mark();
  return m.is_null() ? 0 : m.line + 1;
}

Where where(const Entry& e) {
  // An empty value (`store:`) has no position of its own; its key has.
  int line = e.value.IsNull() || line_of(e.value) == 0 ? line_of(e.key) : line_of(e.value);
  return {line, e.path};
}

std::string join(const Names& names) {
  std::string out;
  for (std::string_view n : names) {
    if (!out.empty()) out += ", ";
    out += n;
  }
  return out;
}

namespace {

// Where each document of a stream starts, and whether it holds anything but null.
class DocumentScanner final : public YAML::EventHandler {
 public:
  struct Document {
    YAML::Mark start;
    bool empty = true;
    YAML::Mark content;  // where its first node is, when not empty
  };
  std::vector<Document> docs;

  void OnDocumentStart(const YAML::Mark& m) override { docs.push_back({m, true, m}); }
  void OnDocumentEnd() override {}
  void OnNull(const YAML::Mark&, YAML::anchor_t) override {}
  void OnAlias(const YAML::Mark& m, YAML::anchor_t) override { content(m); }
  void OnScalar(const YAML::Mark& m, const std::string&, YAML::anchor_t, const std::string&) override {
    content(m);
  }
  void OnSequenceStart(const YAML::Mark& m, const std::string&, YAML::anchor_t,
                       YAML::EmitterStyle::value) override {
    content(m);
  }
  void OnSequenceEnd() override {}
  void OnMapStart(const YAML::Mark& m, const std::string&, YAML::anchor_t,
                  YAML::EmitterStyle::value) override {
    content(m);
  }
  void OnMapEnd() override {}

 private:
  void content(const YAML::Mark& m) {
    if (docs.empty() || !docs.back().empty) return;
    docs.back().empty = false;
    docs.back().content = m;
  }
};

}  // namespace

YAML::Node YamlReader::parse_document(std::string_view text) const {
  const std::string input(text);
  try {
    std::istringstream in(input);
    YAML::Parser parser(in);
    DocumentScanner scan;
    // yaml-cpp 0.7 answers a token it cannot place (a ',' outside a flow collection) with
    // an empty document that does not consume it, again and again: a document starting
    // where the previous one did is that token. Every real document consumes input, so
    // the count is bounded by the size too.
    for (std::size_t n = 0; parser.HandleNextDocument(scan); ++n) {
      const auto& docs = scan.docs;
      bool stuck = docs.size() >= 2 && docs.back().start.pos == docs[docs.size() - 2].start.pos;
      if (stuck || n > input.size()) {
        YAML::Mark at = docs.empty() ? YAML::Mark() : docs.back().start;
        auto pos = static_cast<std::size_t>(at.pos);
        char c = pos < input.size() ? input[pos] : ' ';
        fail({at.line + 1, ""}, c > 0x20 && c < 0x7F ? std::string("invalid YAML: unexpected '") + c + "'"
                                                     : std::string("invalid YAML: unexpected character"));
      }
    }
    for (std::size_t i = 1; i < scan.docs.size(); ++i) {
      if (!scan.docs[i].empty)
        fail({scan.docs[i].content.line + 1, ""}, "more than one YAML document; a config is one");
    }
    return YAML::Load(input);
  } catch (const YAML::Exception& e) {
    // A value ending in ':' (`store: memory:`) reads as a nested mapping to YAML.
    std::string hint = e.msg == "illegal map value" ? " (quote a value that holds ': ' or ends in ':', "
                                                      "such as store: \"memory:\")"
                                                    : "";
    fail({e.mark.is_null() ? 0 : e.mark.line + 1, ""}, "invalid YAML: " + e.msg + hint);
  }
}

void YamlReader::fail(const Where& w, const std::string& reason) const {
  throw ConfigError(source_, w.line, w.path, reason);
}

std::vector<Entry> YamlReader::entries(const YAML::Node& map, const Where& at,
                                       const std::vector<Names>& allowed) const {
  std::vector<Entry> out;
  if (map.IsNull()) return out;
  if (!map.IsMap()) fail(at, "expected a mapping of keys");
  std::unordered_map<std::string, int> seen;
  for (auto it = map.begin(); it != map.end(); ++it) {
    Entry e{it->first, it->second, {}};
    Where key_at{line_of(e.key), at.path};
    if (!e.key.IsScalar()) fail(key_at, "a key must be a plain name");
    const std::string& k = e.key.Scalar();
    e.path = key_at.path = at.path.empty() ? k : at.path + "." + k;
    bool known = false;
    Names all;
    for (const Names& names : allowed) {
      for (std::string_view n : names) known = known || n == k;
      all.insert(all.end(), names.begin(), names.end());
    }
    if (!known && !allowed.empty()) fail(key_at, "unknown key (expected one of: " + join(all) + ")");
    if (auto [prev, fresh] = seen.emplace(k, key_at.line); !fresh) {
      fail(key_at, "repeated key (first set on line " + std::to_string(prev->second) + ")");
    }
    out.push_back(std::move(e));
  }
  return out;
}

std::vector<Entry> YamlReader::items(const Entry& list) const {
  if (!list.value.IsSequence()) fail(list, "expected a list");
  std::vector<Entry> out;
  for (std::size_t i = 0; i < list.value.size(); ++i) {
    out.push_back({list.key, list.value[i], list.path + "[" + std::to_string(i) + "]"});
  }
  return out;
}

const Entry* YamlReader::find(const std::vector<Entry>& es, std::string_view name) {
  for (const Entry& e : es) {
    if (e.key.Scalar() == name) return &e;
  }
  return nullptr;
}

const Entry& YamlReader::require(const std::vector<Entry>& es, std::string_view name,
                                 const Where& parent) const {
  if (const Entry* e = find(es, name)) return *e;
  fail({parent.line, parent.path.empty() ? std::string(name) : parent.path + "." + std::string(name)},
       "required");
}

std::string YamlReader::scalar(const Entry& e, const char* expected) const {
  if (e.value.IsNull()) fail(e, std::string("needs a value: ") + expected);
  if (!e.value.IsScalar()) {
    fail(e, std::string("expected ") + expected + ", got a " + (e.value.IsSequence() ? "list" : "mapping"));
  }
  return expand(e, e.value.Scalar());
}

std::optional<std::string> YamlReader::scalar_if_set(const Entry& e, const char* expected) const {
  if (e.value.IsNull() || !e.value.IsScalar()) return scalar(e, expected);  // fails
  bool unset = false;
  std::string value = expand(e, e.value.Scalar(), &unset);
  if (unset) return std::nullopt;
  return value;
}

std::string YamlReader::expanded_leniently(const Entry& e) const {
  ConfigEnvironment quiet = env_;
  quiet.strict = false;
  quiet.warnings = nullptr;
  return YamlReader(source_, quiet).expand(e, e.value.Scalar());
}

std::optional<std::string> YamlReader::variable(const Entry& e, const std::string& name) const {
  if (std::optional<std::string> value = env_.get(name)) return value;
  const std::string reason = "the environment variable " + name + " is not set";
  if (env_.strict) fail(e, reason);
  if (env_.warnings) env_.warnings->emplace_back(source_, where(e).line, e.path, reason);
  return std::nullopt;
}

std::string YamlReader::expand(const Entry& e, const std::string& text, bool* unset) const {
  if (text.find('$') == std::string::npos) return text;
  std::string out;
  for (std::size_t i = 0; i < text.size();) {
    if (text.compare(i, 3, "$${") == 0) {
      out += "${";
      i += 3;
    } else if (text.compare(i, 2, "${") == 0) {
      const std::size_t end = text.find('}', i + 2);
      if (end == std::string::npos) fail(e, "'${' without its '}' (write $${ for a literal ${)");
      const std::string name = text.substr(i + 2, end - i - 2);
      const bool valid =
          !name.empty() && !(name[0] >= '0' && name[0] <= '9') &&
          name.find_first_not_of("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_") ==
              std::string::npos;
      if (!valid)
        fail(e, "'${" + name +
                    "}' does not name an environment variable (letters, digits and _; write $${ "
                    "for a literal ${)");
      std::optional<std::string> value = variable(e, name);
      if (!value && unset) *unset = true;
      out += value.value_or("");
      i = end + 1;
    } else {
      out += text[i++];
    }
  }
  return out;
}

Duration YamlReader::duration(const Entry& e, Duration min, const char* rule) const {
  Result<Duration> d = parse_duration(scalar(e, "a duration such as 30s"));
  if (!d) fail(e, d.status().message());
  if (*d < min) fail(e, rule);
  return *d;
}

std::uint64_t YamlReader::size(const Entry& e) const {
  Result<std::uint64_t> s = parse_size(scalar(e, "a size such as 1MiB"));
  if (!s) fail(e, s.status().message());
  return *s;
}

std::uint64_t YamlReader::count(const Entry& e, std::uint64_t min, std::uint64_t max) const {
  const std::string s = scalar(e, "a whole number");
  const std::string range = "a whole number from " + std::to_string(min) + " to " + std::to_string(max);
  std::uint64_t n = 0;
  for (char c : s) {
    if (c < '0' || c > '9' || n > max) fail(e, "expected " + range + ", got '" + s + "'");
    n = n * 10 + static_cast<std::uint64_t>(c - '0');
  }
  if (n < min || n > max) fail(e, "expected " + range + ", got '" + s + "'");
  return n;
}

bool YamlReader::boolean(const Entry& e) const {
  std::string s = scalar(e, "true or false");
  if (s == "true" || s == "True" || s == "TRUE") return true;
  if (s == "false" || s == "False" || s == "FALSE") return false;
  fail(e, "expected true or false, got '" + s + "'");
}

std::size_t YamlReader::choice(const Entry& e, const Names& names) const {
  const std::string expected = "one of " + join(names);
  std::string s = scalar(e, expected.c_str());
  for (std::size_t i = 0; i < names.size(); ++i) {
    if (s == names[i]) return i;
  }
  fail(e, "expected " + join(names) + ", got '" + s + "'");
}

}  // namespace idem::gateway
