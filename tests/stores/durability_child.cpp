// The process that the durability tests kill with SIGKILL (docs/design.md I8). It opens the store at
// URI (sqlite:PATH, postgres://...) and, for i = 0, 1, 2, ...: begins key "k<i>" in scope
// SCOPE, commits result_for(SCOPE, i), and only then writes "acked <i>" to standard output.
//
//   durability_child URI SCOPE
#include <cstdio>
#include <string>

#include "idem/open.h"
#include "stores/durability_result.h"

int main(int argc, char** argv) {
  using namespace std::chrono_literals;
  if (argc != 3) {
    std::fprintf(stderr, "usage: %s URI SCOPE\n", argv[0]);
    return 2;
  }
  const std::string scope = argv[2];
  auto store = idem::open_store(argv[1]);
  if (!store) {
    std::fprintf(stderr, "open: %s\n", store.status().to_string().c_str());
    return 1;
  }
  for (std::uint64_t i = 0;; ++i) {
    const std::string key = "k" + std::to_string(i);
    auto b = (*store)->begin({scope, key, "", 1h, 24h});
    if (!b || b->kind != idem::BeginOutcome::Kind::acquired) {
      std::fprintf(stderr, "begin %s: %s\n", key.c_str(),
                   b ? to_string(b->kind) : b.status().to_string().c_str());
      return 1;
    }
    auto c = (*store)->commit({scope, key, b->fence, idem::testutil::result_for(scope, i), 24h});
    if (!c || *c != idem::CommitOutcome::committed) {
      std::fprintf(stderr, "commit %s: %s\n", key.c_str(),
                   c ? to_string(*c) : c.status().to_string().c_str());
      return 1;
    }
    std::printf("acked %llu\n", static_cast<unsigned long long>(i));
    std::fflush(stdout);
  }
}
