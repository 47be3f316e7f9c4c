// Two readings of HTTP/1.1 framing (RFC 9112) that server_fuzz judges the gateway by.
//
// read_requests: the most a conformant server may read from a client's bytes. It reads the
// stream in order as RFC 9112 lets a recipient read it when it is lenient wherever the RFC
// allows leniency (bare LF as a line end, a bare CR or NUL replaced by SP, obs-fold joined
// with SP, empty lines before a request line skipped, whitespace-preceded lines after the
// request line ignored, "Chunked" in any case, whitespace around a chunk size), and stops
// where every conformant server must refuse to go on (docs/fuzzing.md, "The reference
// reading"):
//   - a request line that is not three words METHOD TARGET HTTP/d.d;
//   - a field line without a colon or with whitespace before it;
//   - a Transfer-Encoding that is not exactly `chunked` (the gateway answers 400 and closes);
//   - a Content-Length that is not digits, or a list of differing values;
//   - a malformed chunk size or a chunk not followed by CRLF;
//   - a head or body that the bytes end inside of (nothing complete can be forwarded);
//   - after a request with both Transfer-Encoding and Content-Length (read as chunked: the
//     server must close after it), or an HTTP/1.0 request with Transfer-Encoding (framing
//     faulty: its body is unknown).
// Each choice the RFC leaves to the recipient is either "refuse" or one accepting reading,
// and refusing reads fewer requests; so this reading reads at least as many requests as any
// conformant server, and reads each one that server reads the same way (same method,
// target and body). The requests a conformant gateway forwards are therefore, in order, a
// subsequence of these.
//
// check_sent_head / check_sent_chunked_body: what a well-behaved sender (the gateway talking
// to its upstream) writes, strictly: CRLF line ends only, no obs-fold, no bare CR, single
// spaces in the request line, HTTP/1.1, token field names with the colon right after them,
// field values without control characters, at most one Content-Length (plain digits), no
// Transfer-Encoding but `chunked` and never both; chunk sizes in hex with well-formed
// extensions and no trailer fields (the gateway discards trailers).
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

namespace idem::fuzz::http1 {

inline bool is_tchar(char c) {
  if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9')) return true;
  return std::string_view("!#$%&'*+-.^_`|~").find(c) != std::string_view::npos;
}
inline bool is_token(std::string_view s) {
  if (s.empty()) return false;
  for (char c : s)
    if (!is_tchar(c)) return false;
  return true;
}
inline bool is_ows(char c) { return c == ' ' || c == '\t'; }
inline char lower(char c) { return c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c; }
inline std::string lowered(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = lower(c);
  return out;
}
inline bool iequals(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i)
    if (lower(a[i]) != lower(b[i])) return false;
  return true;
}
inline std::string_view trim_ows(std::string_view s) {
  while (!s.empty() && is_ows(s.front())) s.remove_prefix(1);
  while (!s.empty() && is_ows(s.back())) s.remove_suffix(1);
  return s;
}
inline int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}
// Elements of a comma-separated list, trimmed, empty ones dropped (RFC 9110 §5.6.1).
inline std::vector<std::string_view> list_elements(std::string_view s) {
  std::vector<std::string_view> out;
  while (true) {
    const std::size_t comma = s.find(',');
    std::string_view e = trim_ows(s.substr(0, comma));
    if (!e.empty()) out.push_back(e);
    if (comma == std::string_view::npos) return out;
    s.remove_prefix(comma + 1);
  }
}
// Digits only, saturating at UINT64_MAX; nullopt when not 1*DIGIT.
inline std::optional<std::uint64_t> parse_decimal(std::string_view s) {
  if (s.empty()) return std::nullopt;
  std::uint64_t v = 0;
  for (char c : s) {
    if (c < '0' || c > '9') return std::nullopt;
    const std::uint64_t d = static_cast<std::uint64_t>(c - '0');
    v = v > (UINT64_MAX - d) / 10 ? UINT64_MAX : v * 10 + d;
  }
  return v;
}

// ---- the lenient, conformant reading of a client's bytes ---------------------------------

struct ReadRequest {
  std::string method;
  std::string target;
  std::optional<std::string> body;  // nullopt: framing faulty, any body
  std::set<std::string> names;      // the field names of its head, lower case
};

struct Reading {
  std::vector<ReadRequest> requests;
  std::set<std::string> head_names;     // every field name of every head read, lower case
  std::set<std::string> trailer_names;  // every field name of every trailer section read
  std::string stop;                     // why the reading ended
};

namespace detail {

class Lines {
 public:
  explicit Lines(std::string_view in) : in_(in) {}
  // The next line without its LF and one CR before it, bare CRs and NULs read as SP;
  // nullopt when the bytes end before a LF.
  std::optional<std::string> next() {
    const std::size_t lf = in_.find('\n', pos_);
    if (lf == std::string_view::npos) return std::nullopt;
    std::string line(in_.substr(pos_, lf - pos_));
    pos_ = lf + 1;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    for (char& c : line)
      if (c == '\r' || c == '\0') c = ' ';
    return line;
  }
  std::size_t pos() const { return pos_; }
  void skip(std::size_t n) { pos_ += n; }
  std::size_t left() const { return in_.size() - pos_; }
  std::string_view rest() const { return in_.substr(pos_); }
  bool at_end() const { return pos_ >= in_.size(); }

 private:
  std::string_view in_;
  std::size_t pos_ = 0;
};

struct Field {
  std::string name;  // lower case
  std::string value;
};

// Field lines up to the empty line. False (with `why`) when the section must be refused or
// the bytes end inside it. Whitespace-preceded lines before the first field are ignored
// (RFC 9112 §2.2), later ones are obs-fold, joined to the field before with SP (§5.2).
inline bool read_fields(Lines& lines, std::vector<Field>& out, std::string& why) {
  for (;;) {
    std::optional<std::string> line = lines.next();
    if (!line) {
      why = "the bytes end inside a field section";
      return false;
    }
    if (line->empty()) return true;
    if (is_ows(line->front())) {
      if (!out.empty()) out.back().value += " " + std::string(trim_ows(*line));  // obs-fold
      continue;
    }
    const std::size_t colon = line->find(':');
    if (colon == std::string::npos || colon == 0) {
      why = "a field line without a name and colon";
      return false;
    }
    if (is_ows((*line)[colon - 1])) {
      why = "whitespace before a field's colon";
      return false;
    }
    out.push_back({lowered(std::string_view(*line).substr(0, colon)),
                   std::string(trim_ows(std::string_view(*line).substr(colon + 1)))});
  }
}

inline std::vector<std::string_view> words(std::string_view s) {
  std::vector<std::string_view> out;
  auto space = [](char c) { return c == ' ' || c == '\t' || c == '\v' || c == '\f'; };
  std::size_t i = 0;
  while (i < s.size()) {
    while (i < s.size() && space(s[i])) ++i;
    const std::size_t start = i;
    while (i < s.size() && !space(s[i])) ++i;
    if (i > start) out.push_back(s.substr(start, i - start));
  }
  return out;
}

inline bool is_version(std::string_view v) {
  return v.size() == 8 && v.starts_with("HTTP/") && v[5] >= '0' && v[5] <= '9' && v[6] == '.' &&
         v[7] >= '0' && v[7] <= '9';
}

enum class Body {
  done,
  incomplete,       // the bytes end inside the body
  refuse,           // malformed chunk framing: the request cannot be read
  trailers_unread,  // the data is complete, the trailer section malformed or cut short
};

// A chunked body (RFC 9112 §7.1), leniently: whitespace around the size, any extension
// after ';', bare LF line ends.
inline Body read_chunked(Lines& lines, std::string& body, std::vector<Field>& trailers, std::string& why) {
  for (;;) {
    std::optional<std::string> line = lines.next();
    if (!line) {
      why = "the bytes end inside a chunk size line";
      return Body::incomplete;
    }
    std::string_view l = *line;
    while (!l.empty() && is_ows(l.front())) l.remove_prefix(1);
    std::uint64_t size = 0;
    std::size_t digits = 0;
    while (digits < l.size() && hex_value(l[digits]) >= 0) {
      size =
          size > (UINT64_MAX >> 4) ? UINT64_MAX : (size << 4) | static_cast<unsigned>(hex_value(l[digits]));
      ++digits;
    }
    std::string_view ext = l.substr(digits);
    while (!ext.empty() && is_ows(ext.front())) ext.remove_prefix(1);
    if (digits == 0 || (!ext.empty() && ext.front() != ';')) {
      why = "a malformed chunk size line";
      return Body::refuse;
    }
    if (size == 0) break;
    if (size > lines.left()) {
      why = "the bytes end inside a chunk";
      return Body::incomplete;
    }
    body.append(lines.rest().substr(0, size));
    lines.skip(size);
    const std::string_view after = lines.rest();
    if (after.starts_with("\r\n")) {
      lines.skip(2);
    } else if (after.starts_with("\n")) {
      lines.skip(1);
    } else if (after.empty() || after == "\r") {
      why = "the bytes end after a chunk's data";
      return Body::incomplete;
    } else {
      why = "a chunk's data not followed by CRLF";
      return Body::refuse;
    }
  }
  if (!read_fields(lines, trailers, why)) return Body::trailers_unread;
  return Body::done;
}

}  // namespace detail

inline Reading read_requests(std::string_view in) {
  Reading r;
  detail::Lines lines(in);
  for (;;) {
    // Empty lines before a request line are skipped (RFC 9112 §2.2).
    std::optional<std::string> start;
    do {
      start = lines.next();
    } while (start && start->empty());
    if (!start) {
      r.stop = lines.at_end() ? "end of input" : "the bytes end inside a request line";
      return r;
    }
    const auto w = detail::words(*start);
    if (w.size() != 3 || !is_token(w[0]) || !detail::is_version(w[2])) {
      r.stop = "not a request line: " + *start;
      return r;
    }
    ReadRequest req{std::string(w[0]), std::string(w[1]), std::string(), {}};
    const bool http10 = w[2] == "HTTP/1.0";
    std::vector<detail::Field> fields;
    if (!detail::read_fields(lines, fields, r.stop)) return r;
    for (const auto& f : fields) req.names.insert(f.name);
    r.head_names.insert(req.names.begin(), req.names.end());

    std::string te, cl;
    bool has_te = false, has_cl = false;
    for (const auto& f : fields) {
      if (f.name == "transfer-encoding") {
        has_te = true;
        te += "," + f.value;
      } else if (f.name == "content-length") {
        has_cl = true;
        cl += "," + f.value;
      }
    }
    const auto codings = list_elements(te);
    if (has_te && codings.empty()) has_te = false;  // an empty list: read as no coding at all
    if (has_te && !(codings.size() == 1 && iequals(codings[0], "chunked"))) {
      r.stop = "a Transfer-Encoding other than chunked: " + te.substr(1);
      return r;
    }
    if (has_te && http10) {
      req.body.reset();
      r.requests.push_back(std::move(req));
      r.stop = "an HTTP/1.0 request with Transfer-Encoding";
      return r;
    }
    if (has_te) {
      std::vector<detail::Field> trailers;
      const detail::Body b = detail::read_chunked(lines, *req.body, trailers, r.stop);
      for (const auto& f : trailers) r.trailer_names.insert(f.name);
      if (b == detail::Body::incomplete || b == detail::Body::refuse) return r;
      r.requests.push_back(std::move(req));
      // The last chunk was read but not the trailer section: a streaming server may have
      // forwarded the whole request before it reads the trailers, so it counts; nothing after.
      if (b == detail::Body::trailers_unread) return r;
      if (has_cl) {
        r.stop = "a request with both Transfer-Encoding and Content-Length";
        return r;
      }
      continue;
    }
    std::uint64_t length = 0;
    if (has_cl) {
      const auto values = list_elements(cl);
      std::optional<std::uint64_t> first;
      for (std::string_view v : values) {
        const auto n = parse_decimal(v);
        if (!n || (first && *first != *n)) {
          r.stop = "an invalid Content-Length: " + cl.substr(1);
          return r;
        }
        first = n;
      }
      if (!first) {
        r.stop = "an empty Content-Length";
        return r;
      }
      length = *first;
    }
    if (length > lines.left()) {
      r.stop = "the bytes end inside a body";
      return r;
    }
    req.body = std::string(lines.rest().substr(0, length));
    lines.skip(length);
    r.requests.push_back(std::move(req));
  }
}

// ---- the strict check of what a sender wrote -------------------------------------------

// The head of one request as sent (request line to the empty line, CRLFs included). An
// empty string when it is well-formed, else what is wrong.
inline std::string check_sent_head(std::string_view head) {
  if (!head.ends_with("\r\n\r\n")) return "the head does not end with CRLF CRLF";
  std::vector<std::string_view> lines;
  std::string_view h = head.substr(0, head.size() - 2);
  while (!h.empty()) {
    const std::size_t crlf = h.find("\r\n");
    lines.push_back(h.substr(0, crlf));
    h.remove_prefix(crlf + 2);
  }
  for (std::string_view l : lines) {
    for (char c : l) {
      if (c == '\r' || c == '\n' || c == '\0') return "a bare CR, LF or NUL in the head";
    }
  }
  if (lines.empty()) return "no request line";
  const std::string_view rl = lines[0];
  const std::size_t sp1 = rl.find(' ');
  const std::size_t sp2 = sp1 == std::string_view::npos ? sp1 : rl.find(' ', sp1 + 1);
  if (sp2 == std::string_view::npos || rl.find(' ', sp2 + 1) != std::string_view::npos)
    return "a request line that is not METHOD SP TARGET SP VERSION";
  if (!is_token(rl.substr(0, sp1))) return "a method that is not a token";
  const std::string_view target = rl.substr(sp1 + 1, sp2 - sp1 - 1);
  if (target.empty()) return "an empty target";
  for (char c : target) {
    if (static_cast<unsigned char>(c) <= 0x20 || c == 0x7f) return "a control character in the target";
  }
  if (rl.substr(sp2 + 1) != "HTTP/1.1") return "a version other than HTTP/1.1";
  int te = 0, cl = 0;
  for (std::size_t i = 1; i < lines.size(); ++i) {
    const std::string_view l = lines[i];
    if (l.empty() || is_ows(l.front())) return "obs-fold or an empty field line";
    const std::size_t colon = l.find(':');
    if (colon == std::string_view::npos || !is_token(l.substr(0, colon)))
      return "a field line that is not token \":\" value";
    const std::string_view name = l.substr(0, colon);
    const std::string_view value = trim_ows(l.substr(colon + 1));
    for (char c : value) {
      if ((static_cast<unsigned char>(c) < 0x20 && c != '\t') || c == 0x7f)
        return "a control character in a field value";
    }
    if (iequals(name, "transfer-encoding")) {
      ++te;
      if (value != "chunked") return "a Transfer-Encoding other than chunked";
    }
    if (iequals(name, "content-length")) {
      ++cl;
      if (!parse_decimal(value)) return "a Content-Length that is not digits";
    }
  }
  if (te > 1) return "Transfer-Encoding twice";
  if (cl > 1) return "Content-Length twice";
  if (te && cl) return "both Transfer-Encoding and Content-Length";
  return {};
}

// The bytes of a chunked body as sent (from the first chunk size to the end of the
// message). An empty string when well-formed, else what is wrong.
inline std::string check_sent_chunked_body(std::string_view body) {
  for (;;) {
    const std::size_t crlf = body.find("\r\n");
    if (crlf == std::string_view::npos) return "a chunk size line without CRLF";
    std::string_view line = body.substr(0, crlf);
    body.remove_prefix(crlf + 2);
    std::size_t digits = 0;
    std::uint64_t size = 0;
    while (digits < line.size() && hex_value(line[digits]) >= 0) {
      if (digits >= 15) return "a chunk size of more than 15 hex digits";
      size = (size << 4) | static_cast<unsigned>(hex_value(line[digits]));
      ++digits;
    }
    if (digits == 0) return "a chunk size line without a size";
    // chunk-ext = *( BWS ";" BWS ext-name [ BWS "=" BWS ext-val ] ), ext-val a token or a
    // quoted string (RFC 9112 §7.1.1).
    std::string_view ext = line.substr(digits);
    while (!ext.empty()) {
      ext = trim_ows(ext);
      if (!ext.starts_with(';')) return "a malformed chunk extension";
      ext = trim_ows(ext.substr(1));
      std::size_t n = 0;
      while (n < ext.size() && is_tchar(ext[n])) ++n;
      if (n == 0) return "a chunk extension without a name";
      ext = trim_ows(ext.substr(n));
      if (!ext.starts_with('=')) continue;
      ext = trim_ows(ext.substr(1));
      if (ext.starts_with('"')) {
        std::size_t i = 1;
        while (i < ext.size() && ext[i] != '"') i += ext[i] == '\\' ? 2 : 1;
        if (i >= ext.size()) return "an unterminated quoted chunk extension value";
        ext.remove_prefix(i + 1);
      } else {
        n = 0;
        while (n < ext.size() && is_tchar(ext[n])) ++n;
        if (n == 0) return "a chunk extension without a value after =";
        ext.remove_prefix(n);
      }
    }
    if (size == 0) break;
    if (size + 2 > body.size()) return "a chunk longer than the body";
    if (body.substr(size, 2) != "\r\n") return "a chunk's data not followed by CRLF";
    body.remove_prefix(size + 2);
  }
  if (body != "\r\n") return "a trailer section (the gateway must discard trailers) or stray bytes";
  return {};
}

}  // namespace idem::fuzz::http1
