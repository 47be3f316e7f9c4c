// The fuzz harness's recording upstream (fuzz/recording_upstream.h) as a process, for
// tests/e2e/framing_differential.py: it checks every request it gets strictly (a
// malformed one aborts it, with the bytes on stderr), answers 200, and appends each request
// to LOG as one JSON line {"method": ..., "target": hex, "body": hex, "client": hex} before
// answering it, so a client that has its answer finds the request in the file. `client` is
// the last address of X-Forwarded-For (the gateway's peer, which it appends), so clients that
// connect from different loopback addresses can tell their requests apart.
// Usage: recording_upstream LOG; prints the bound port on stdout.
#include <unistd.h>

#include <cstdio>
#include <string>
#include <string_view>

#include "fuzz/recording_upstream.h"

namespace {

std::string hex(std::string_view bytes) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  for (unsigned char c : bytes) {
    out += kHex[c >> 4];
    out += kHex[c & 15];
  }
  return out;
}

// The last element of the X-Forwarded-For fields: the address the gateway appended.
std::string client_of(const idem::fuzz::Received& r) {
  std::string last;
  for (const auto& [name, value] : r.fields) {
    if (name != "x-forwarded-for") continue;
    std::string_view v = value;
    v.remove_prefix(v.rfind(',') == std::string_view::npos ? 0 : v.rfind(',') + 1);
    while (!v.empty() && v.front() == ' ') v.remove_prefix(1);
    last = std::string(v);
  }
  return last;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: recording_upstream LOG\n");
    return 2;
  }
  std::FILE* log = std::fopen(argv[1], "a");
  if (!log) {
    std::perror(argv[1]);
    return 1;
  }
  idem::fuzz::RecordingUpstream upstream([log](const idem::fuzz::Received& r) {
    // A method is a token (the upstream's parser refuses anything else): no escaping needed.
    std::fprintf(log, "{\"method\": \"%s\", \"target\": \"%s\", \"body\": \"%s\", \"client\": \"%s\"}\n",
                 r.method.c_str(), hex(r.target).c_str(), hex(r.body).c_str(), hex(client_of(r)).c_str());
    std::fflush(log);
  });
  std::printf("%u\n", upstream.port());
  std::fflush(stdout);
  for (;;) ::pause();
}
