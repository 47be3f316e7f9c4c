// End to end: what another user of the gateway's machine can learn (issue 29, item 9): the
// SQLite files' modes whatever the umask, store URIs (and their passwords) kept off the
// command line that `ps` shows, and request-log key hashes that cannot be reversed by
// hashing guessed keys.
#include <sys/stat.h>

#include <cstdlib>
#include <sstream>

#include "e2e/e2e_fixture.h"
#include "testutil/eventually.h"

namespace idem::e2e {
namespace {

// A temporary directory removed at the end of the test.
struct TempDir {
  std::string path = temp_dir();
  ~TempDir() { remove_dir(path); }
};

// The permission bits of `path`, or -1 when it does not exist.
int mode_of(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 ? static_cast<int>(st.st_mode & 07777) : -1;
}

// Sets the process's umask for a scope (the children it starts inherit it).
struct Umask {
  explicit Umask(mode_t m) : old(::umask(m)) {}
  ~Umask() { ::umask(old); }
  mode_t old;
};

std::string orders_config(unsigned short port, unsigned short upstream, unsigned short admin,
                          const std::string& store) {
  return config_head(port, upstream, admin, store) +
         "routes:\n  - name: orders\n    match: { method: POST, path: /orders }\n";
}

// The SQLite store's file, WAL and shared-memory file held unspent tokens and stored
// responses, and were made 0644 less the umask: readable by every local user.
TEST(LocalAccess, TheSqliteFilesAreTheOwnersAloneWhateverTheUmask) {
  for (const mode_t umask : {mode_t{022}, mode_t{0}}) {
    Umask scoped(umask);
    TempDir tmp;
    Process upstream({IDEM_TEST_UPSTREAM}, tmp.path + "/upstream.log", true);
    const unsigned short port = free_port(), admin = free_port();
    const std::string db = tmp.path + "/idem.db";
    write_file(tmp.path + "/idem.yaml", orders_config(port, upstream.port(), admin, "sqlite:" + db));
    Process idem({IDEM_BIN, "serve", "--config", tmp.path + "/idem.yaml"}, tmp.path + "/idem.log");
    ASSERT_TRUE(wait_healthy(admin, 5000)) << read_text(tmp.path + "/idem.log");
    ASSERT_EQ(request(port, verb::post, "/orders", {{"Idempotency-Key", "k-1"}}, "{}").result_int(), 201u);
    for (const char* suffix : {"", "-wal", "-shm"})
      EXPECT_EQ(mode_of(db + suffix), 0600) << "umask " << std::oct << umask << ": idem.db" << suffix;
    // A store the command line makes is the owner's too.
    std::string out;
    EXPECT_EQ(run({IDEM_BIN, "sweep", "--store", "sqlite:" + tmp.path + "/swept.db"}, &out), 0) << out;
    EXPECT_EQ(mode_of(tmp.path + "/swept.db"), 0600) << "umask " << std::oct << umask;
  }
  // A file that exists keeps the mode its owner gave it.
  TempDir tmp;
  const std::string db = tmp.path + "/shared.db";
  write_file(db, "");
  ::chmod(db.c_str(), 0640);
  std::string out;
  EXPECT_EQ(run({IDEM_BIN, "sweep", "--store", "sqlite:" + db}, &out), 0) << out;
  EXPECT_EQ(mode_of(db), 0640);
}

// `idem sweep` and `idem record ...` took the store URI, password and all, only as an
// argument, which every local user sees in `ps`. They take it from a config file (whose
// ${NAME} come from the environment) or from IDEM_STORE as well; --store still wins.
TEST(LocalAccess, TheCliTakesItsStoreFromAConfigOrTheEnvironment) {
  TempDir tmp;
  Process upstream({IDEM_TEST_UPSTREAM}, tmp.path + "/upstream.log", true);
  const unsigned short port = free_port(), admin = free_port();
  const std::string db = tmp.path + "/idem.db";
  // The store's path from the environment, as a password would be: ${NAME} in the file;
  // and an admin token, which the commands below do not need.
  write_file(tmp.path + "/idem.yaml",
             config_head(port, upstream.port(), admin, "sqlite:${IDEM_E2E_DB}") +
                 "  token_env: IDEM_E2E_ADMIN_TOKEN\n"
                 "routes:\n  - name: orders\n    match: { method: POST, path: /orders }\n");
  ::setenv("IDEM_E2E_DB", db.c_str(), 1);
  ::setenv("IDEM_E2E_ADMIN_TOKEN", "t0ken", 1);
  Process idem({IDEM_BIN, "serve", "--config", tmp.path + "/idem.yaml"}, tmp.path + "/idem.log");
  ASSERT_TRUE(wait_healthy(admin, 5000)) << read_text(tmp.path + "/idem.log");
  ASSERT_EQ(request(port, verb::post, "/orders", {{"Idempotency-Key", "k-1"}}, "{}").result_int(), 201u);
  ::unsetenv("IDEM_E2E_ADMIN_TOKEN");

  auto idem_cli = [](std::vector<std::string> args, const char* store_env = nullptr) {
    if (store_env)
      ::setenv("IDEM_STORE", store_env, 1);
    else
      ::unsetenv("IDEM_STORE");
    args.insert(args.begin(), IDEM_BIN);
    std::string out;
    const int rc = run(args, &out);
    ::unsetenv("IDEM_STORE");
    return std::pair{rc, out};
  };
  const std::string config = tmp.path + "/idem.yaml";
  // From the config file.
  auto [rc, out] = idem_cli({"record", "get", "--config", config, "--key-space", "orders", "k-1"});
  EXPECT_EQ(rc, 0) << out;
  EXPECT_NE(out.find("\"key\":\"orders:k-1\""), std::string::npos) << out;
  std::tie(rc, out) = idem_cli({"record", "list", "--config", config, "--key-space", "orders"});
  EXPECT_EQ(rc, 0) << out;
  EXPECT_NE(out.find("\"orders:k-1\""), std::string::npos) << out;
  std::tie(rc, out) = idem_cli({"sweep", "--config", config});
  EXPECT_EQ(rc, 0) << out;
  EXPECT_EQ(out, "0\n");
  // From the environment.
  const std::string uri = "sqlite:" + db;
  std::tie(rc, out) = idem_cli({"record", "get", "--key-space", "orders", "k-1"}, uri.c_str());
  EXPECT_EQ(rc, 0) << out;
  EXPECT_NE(out.find("\"key\":\"orders:k-1\""), std::string::npos) << out;
  std::tie(rc, out) = idem_cli({"sweep"}, uri.c_str());
  EXPECT_EQ(rc, 0) << out;
  // --store first, then --config, then IDEM_STORE.
  const std::string empty = "sqlite:" + tmp.path + "/empty.db";
  std::tie(rc, out) =
      idem_cli({"record", "get", "--store", empty, "--key-space", "orders", "k-1"}, uri.c_str());
  EXPECT_EQ(rc, 1) << out;
  EXPECT_EQ(out,
            "idem: not found: no record for key \"k-1\" in key space orders (stored key \"orders:k-1\")\n");
  std::tie(rc, out) =
      idem_cli({"record", "get", "--config", config, "--key-space", "orders", "k-1"}, empty.c_str());
  EXPECT_EQ(rc, 0) << out;
  // A variable the store needs, unset: exit 2 naming it; other unset ones do not matter.
  ::unsetenv("IDEM_E2E_DB");
  std::tie(rc, out) = idem_cli({"sweep", "--config", config});
  EXPECT_EQ(rc, 2) << out;
  EXPECT_NE(out.find("store: the environment variable IDEM_E2E_DB is not set"), std::string::npos) << out;
  // None of the three: exit 2, saying where a store may come from.
  std::tie(rc, out) = idem_cli({"sweep"});
  EXPECT_EQ(rc, 2) << out;
  EXPECT_EQ(out,
            "idem: no store: give --store URI, --config FILE (its store) or the environment variable "
            "IDEM_STORE\n");
}

// The request log's key_hash was an unsalted SHA-256 of the scope and key, so a template
// key built from guessable ids (an order number) could be recovered from the log by hashing
// guesses. It is keyed now: HMAC-SHA256 under IDEM_KEY_HASH_SECRET, the install's secret
// (the package writes a random one), or under a random secret of the process without one.
std::string log_key_hash(const std::string& log, const std::string& request_id) {
  std::istringstream lines(log);
  for (std::string line; std::getline(lines, line);) {
    if (line.find(request_id) == std::string::npos || !line.starts_with("{\"time\"")) continue;
    return std::string(json::parse(line).as_object().at("key_hash").as_string());
  }
  return "";
}

// The first 12 hex digits of `digest` (openssl dgst's output, "... = hex" or "SHA2-256(stdin)= hex").
std::string first12(const std::string& digest) {
  const auto eq = digest.rfind("= ");
  return eq == std::string::npos ? "" : digest.substr(eq + 2, 12);
}

TEST(LocalAccess, TheLogsKeyHashIsKeyedByTheInstallsSecret) {
  TempDir tmp;
  Process upstream({IDEM_TEST_UPSTREAM}, tmp.path + "/upstream.log", true);
  auto key_hash_of = [&](const char* secret, const std::string& request_id) {
    const unsigned short port = free_port(), admin = free_port();
    write_file(tmp.path + "/idem.yaml", orders_config(port, upstream.port(), admin, "memory:"));
    if (secret)
      ::setenv("IDEM_KEY_HASH_SECRET", secret, 1);
    else
      ::unsetenv("IDEM_KEY_HASH_SECRET");
    const std::string log = tmp.path + "/idem-" + request_id + ".log";
    Process idem({IDEM_BIN, "serve", "--config", tmp.path + "/idem.yaml"}, log);
    ::unsetenv("IDEM_KEY_HASH_SECRET");
    EXPECT_TRUE(wait_healthy(admin, 5000)) << read_text(log);
    EXPECT_EQ(request(port, verb::post, "/orders",
                      {{"Idempotency-Key", "order-1001"}, {"X-Request-Id", request_id}}, "{}")
                  .result_int(),
              201u);
    std::string hash;
    EXPECT_TRUE(testutil::eventually([&] {
      return !(hash = log_key_hash(read_text(log), request_id)).empty();
    })) << read_text(log);
    return hash;
  };
  // What the operator computes for a key they know (docs/observability.md): the record's
  // scope ("" here), a newline, and the stored key "orders:order-1001".
  const std::string keyed = key_hash_of("install-s3cret", "rid-keyed");
  std::string expected;
  ASSERT_EQ(
      run({"/bin/sh", "-c", "printf \"\\norders:order-1001\" | openssl dgst -sha256 -hmac install-s3cret"},
          &expected),
      0)
      << expected;
  EXPECT_EQ(keyed, first12(expected));
  std::string unkeyed;
  ASSERT_EQ(run({"/bin/sh", "-c", "printf \"\\norders:order-1001\" | openssl dgst -sha256"}, &unkeyed), 0);
  EXPECT_NE(keyed, first12(unkeyed)) << "anyone can hash a guessed key without the secret";
  EXPECT_EQ(key_hash_of("install-s3cret", "rid-again"), keyed)
      << "one secret: one key's lines found together";
  // Without the variable: a secret of the process's own, never the unkeyed hash.
  const std::string a = key_hash_of(nullptr, "rid-a"), b = key_hash_of(nullptr, "rid-b");
  EXPECT_NE(a, first12(unkeyed));
  EXPECT_NE(a, b);
}

}  // namespace
}  // namespace idem::e2e
