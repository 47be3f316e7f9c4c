// The scripts are the files of protocol/redis/ (protocol/README.md, "Redis"), which say what each
// takes and answers. Fences: a record's or lock's fence key keeps the last fence handed out for
// its name and outlives the record (or lock) by a day. A new fence is max(previous + 1, server
// µs), so it is greater than every fence handed out while the fence key lived; once the key is
// gone (a day without any acquisition), the server's clock has long passed every earlier fence —
// unless the clock stepped back by more than a day, the one exception docs/design.md I2 allows.
#include "stores/redis/redis_scripts.h"

#include <openssl/sha.h>

#include "stores/protocol/protocol_files.h"
#include "util/hex.h"

namespace idem::redis {
namespace {

// protocol/redis/<name>.lua after protocol/redis/prelude.lua (protocol/README.md, "Redis").
Script make(const char* name) {
  Script s{name, std::string(protocol::body("redis/prelude.lua")), {}};
  s.text += '\n';
  s.text += protocol::body(std::string("redis/") + name + ".lua");
  unsigned char digest[SHA_DIGEST_LENGTH];
  SHA1(reinterpret_cast<const unsigned char*>(s.text.data()), s.text.size(), digest);
  s.sha1 = util::to_hex(std::string_view(reinterpret_cast<const char*>(digest), sizeof digest));
  return s;
}

}  // namespace

const Scripts& scripts() {
  static const Scripts kScripts{
      make("begin"), make("commit"), make("release"),     make("abandon"),       make("extend"),
      make("get"),   make("remove"), make("issue_token"), make("consume_token"), make("restore_token"),
      make("lock"),  make("unlock"), make("extend_lock"),
  };
  return kScripts;
}

}  // namespace idem::redis
