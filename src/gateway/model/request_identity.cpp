#include "gateway/model/request_identity.h"

#include <new>

#include <openssl/evp.h>
#include <openssl/rand.h>

#include "gateway/model/jsonrpc.h"
#include "gateway/model/jwt.h"
#include "gateway/model/key.h"
#include "gateway/model/key_template.h"
#include "gateway/model/principal.h"
#include "gateway/model/request_fingerprint.h"
#include "gateway/model/request_reading.h"
#include "idem/fingerprint.h"

namespace idem::gateway {
namespace {

// Step 2 for header and token keys: the key, or nothing when absent (the caller decides
// between `*_missing` and unprotected).
ProblemOr<std::optional<std::string>> key_from_header(const RequestView& head, std::string_view name,
                                                      Problem invalid) {
  std::size_t n = count_headers(head.headers, name);
  if (n == 0) return std::optional<std::string>();
  if (n > 1) return Rejection{invalid, "the " + std::string(name) + " header is sent more than once"};
  Result<std::string> key = parse_key_header(*find_header(head.headers, name));
  if (!key) return Rejection{invalid, std::string(name) + ": " + key.status().message()};
  return std::optional<std::string>(std::move(*key));
}

}  // namespace

ProblemOr<std::string> subject_of(const Subject& subject, std::span<const HeaderField> headers) {
  if (subject.kind == Subject::Kind::none) return std::string();
  if (subject.kind == Subject::Kind::jwt) return jwt_claim_of(*subject.jwt, subject.claim, headers, true);
  ProblemOr<std::optional<std::string>> value = read_header(headers, subject.header);
  if (!value) return std::move(value).rejection();
  if (!*value || (*value)->empty()) {
    return Rejection{Problem::subject_missing, "the " + subject.header + " header is missing"};
  }
  if (subject.kind == Subject::Kind::header_hash) return hash_subject(**value);
  return std::move(**value);
}

Decision check_head(const Route& route, const RequestView& head) {
  if (auto refusal = connection_names_a_read_field(route, head.headers))
    return Decision::reject(std::move(*refusal));
  ProblemOr<std::string> scope =
      route.jsonrpc ? ProblemOr<std::string>(std::string()) : subject_of(route.policy.subject, head.headers);
  if (!scope) return Decision::reject(std::move(scope).rejection());

  Decision d;
  if (route.jsonrpc) return d;  // identify reads the call first
  d.identity.scope = std::move(*scope);
  if (route.mode == Mode::replay) {
    ProblemOr<std::string> principal = principal_of(effective_principal(route.policy), head.headers);
    if (!principal) return Decision::reject(std::move(principal).rejection());
    d.identity.principal = std::move(*principal);
  }
  if (route.key.kind == KeyRule::Kind::templated) return d;  // rendered after the body is read

  const bool token = route.key.kind == KeyRule::Kind::token;
  const std::string_view header = token ? kTokenHeader : std::string_view(route.key.header);
  auto key = key_from_header(head, header, token ? Problem::token_invalid : Problem::key_invalid);
  if (!key) return Decision::reject(std::move(key).rejection());
  if (!key->has_value()) {
    if (!route.required) return Decision::unprotected();
    return Decision::reject({token ? Problem::token_missing : Problem::key_missing,
                             "the " + std::string(header) + " header is missing"});
  }
  d.identity.key = std::move(**key);
  return d;
}

std::optional<Rejection> check_body_size(const Route& route, std::uint64_t size) {
  if (size <= route.policy.max_body) return std::nullopt;
  return Rejection{Problem::body_too_large,
                   "the request body is larger than " + std::to_string(route.policy.max_body) + " bytes"};
}

namespace {

// identify() on a JSON-RPC route: the call first, then check_head's subject and header key
// for it, then the template key, then the call's fingerprint.
Decision identify_call(const Route& route, const PathParams& params, const RequestView& request) {
  // The subject is read first but matters only to a protected call; one context, so the
  // body is parsed once.
  ProblemOr<std::string> scope = subject_of(route.policy.subject, request.headers);
  RequestContext context(request, params, scope ? *scope : std::string());
  JsonRpcCall call = read_jsonrpc_call(*route.jsonrpc, context.json_body(), request.body);
  const auto refuse = [&](Rejection r) {
    Decision d = Decision::reject(std::move(r));
    d.identity.jsonrpc_id = call.kind == JsonRpcCall::Kind::call ? call.id : "null";
    return d;
  };
  if (call.kind == JsonRpcCall::Kind::batch)
    return refuse(
        {Problem::body_invalid, "a JSON-RPC batch is not accepted on this route: send its calls one by one"});
  if (call.kind == JsonRpcCall::Kind::pass) return Decision::unprotected();

  if (!scope) return refuse(std::move(scope).rejection());
  ProblemOr<std::string> principal = principal_of(effective_principal(route.policy), request.headers);
  if (!principal) return refuse(std::move(principal).rejection());
  Decision d;
  d.identity.jsonrpc_id = call.id;
  d.identity.scope = std::move(*scope);
  d.identity.principal = std::move(*principal);
  if (route.key.kind == KeyRule::Kind::header) {
    auto key = key_from_header(request, route.key.header, Problem::key_invalid);
    if (!key) return refuse(std::move(key).rejection());
    if (!key->has_value()) {
      if (!route.required) return Decision::unprotected();
      return refuse({Problem::key_missing, "the " + route.key.header + " header is missing"});
    }
    d.identity.key = std::move(**key);
  } else {
    ProblemOr<std::string> key = render_key(route.key.key_template, context);
    if (!key) {
      if (key.problem() == Problem::key_missing && !route.required) return Decision::unprotected();
      return refuse(std::move(key).rejection());
    }
    d.identity.key = std::move(*key);
  }
  d.identity.record_key = stored_key(route.key_space, d.identity.key);
  d.identity.fingerprint = Fingerprinter().add("jsonrpc").add(call.canonical).finish();
  return d;
}

}  // namespace

Decision identify(const Route& route, const PathParams& params, const RequestView& request, Decision head) {
  if (head.verdict != Verdict::protect) return head;
  if (route.jsonrpc) return identify_call(route, params, request);
  // One context for the key and the fingerprint, so the body is parsed at most once.
  RequestContext context(request, params, head.identity.scope);

  if (route.key.kind == KeyRule::Kind::templated) {
    ProblemOr<std::string> key = render_key(route.key.key_template, context);
    if (!key) {
      if (key.problem() == Problem::key_missing && !route.required) return Decision::unprotected();
      return Decision::reject(std::move(key).rejection());
    }
    head.identity.key = std::move(*key);
  }
  head.identity.record_key = stored_key(route.key_space, head.identity.key);

  // A lock only excludes; there is no stored result for a fingerprint to protect.
  if (route.mode == Mode::replay) {
    ProblemOr<std::string> fingerprint = request_fingerprint(route.policy.fingerprint, context);
    if (!fingerprint) return Decision::reject(std::move(fingerprint).rejection());
    head.identity.fingerprint = std::move(*fingerprint);
  }
  return head;
}

Decision identify_request(const RouteMatch& match, const RequestView& request) {
  Decision head = check_head(*match.route, request);
  if (head.verdict != Verdict::protect) return head;
  if (auto too_large = check_body_size(*match.route, request.body.size())) {
    return Decision::reject(std::move(*too_large));
  }
  return identify(*match.route, match.params, request, std::move(head));
}

namespace {

using Digest = std::array<unsigned char, 32>;

// SHA-256 of the parts, one after the other. The algorithm is fetched once and each thread
// keeps its context: EVP_Digest fetches and allocates on every call, which cost more than
// hashing a short value.
Digest sha256(std::initializer_list<std::string_view> parts) {
  static EVP_MD* const algorithm = EVP_MD_fetch(nullptr, "SHA256", nullptr);
  struct Context {
    EVP_MD_CTX* ctx = EVP_MD_CTX_new();
    ~Context() { EVP_MD_CTX_free(ctx); }
  };
  thread_local Context context;
  EVP_MD_CTX* ctx = context.ctx;
  bool ok = algorithm != nullptr && ctx != nullptr && EVP_DigestInit_ex2(ctx, algorithm, nullptr) == 1;
  for (std::string_view p : parts) ok = ok && EVP_DigestUpdate(ctx, p.data(), p.size()) == 1;
  Digest digest;
  unsigned int size = 0;
  if (!ok || EVP_DigestFinal_ex(ctx, digest.data(), &size) != 1 || size != digest.size())
    throw std::bad_alloc();  // SHA-256 fails only when it cannot allocate
  return digest;
}

std::string_view bytes(const auto& a) { return {reinterpret_cast<const char*>(a.data()), a.size()}; }

}  // namespace

std::string hash_subject(std::string_view value) { return to_hex(bytes(sha256({value}))); }

KeyHasher::KeyHasher(std::string_view secret) {
  std::array<unsigned char, 32> random{};
  if (secret.empty()) {
    if (RAND_bytes(random.data(), static_cast<int>(random.size())) != 1) throw std::bad_alloc();
    secret = bytes(random);
  }
  // RFC 2104: a key longer than the block is hashed first; the pads are the key, zero-filled
  // to the block, XORed with 0x36 and 0x5c.
  Digest hashed;
  if (secret.size() > kBlock) {
    hashed = sha256({secret});
    secret = bytes(hashed);
  }
  for (std::size_t i = 0; i < kBlock; ++i) {
    const auto k = static_cast<unsigned char>(i < secret.size() ? secret[i] : 0);
    inner_pad_[i] = static_cast<unsigned char>(k ^ 0x36);
    outer_pad_[i] = static_cast<unsigned char>(k ^ 0x5c);
  }
}

std::string KeyHasher::operator()(std::string_view scope, std::string_view key) const {
  return to_hex(mac(scope, key)).substr(0, 12);
}

std::string KeyHasher::mac(std::string_view a, std::string_view b) const {
  const Digest inner = sha256({bytes(inner_pad_), a, "\n", b});
  return std::string(bytes(sha256({bytes(outer_pad_), bytes(inner)})));
}

}  // namespace idem::gateway
