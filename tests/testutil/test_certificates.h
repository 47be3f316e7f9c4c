// Certificates for tests of TLS, made once per test binary with the openssl command in a
// temporary directory: a CA ("ca.crt", "ca.key"); a server certificate it signs for
// localhost and 127.0.0.1 ("server.crt", "server.key"); a client certificate it signs
// ("client.crt", "client.key"); and another CA that signs nothing ("other.crt").
#pragma once

#include <cstdlib>
#include <fstream>
#include <string>

#include "testutil/temp_dir.h"

namespace idem::testutil {

class Certificates {
 public:
  Certificates() {
    const std::string d = dir_.path().string();
    const std::string key = "-newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes";
    auto run = [&](const std::string& command) {
      return ok_ && (ok_ = std::system(("cd " + d + " && " + command + " >/dev/null 2>&1").c_str()) == 0);
    };
    auto ext = [&](const std::string& file, const std::string& text) {
      std::ofstream(d + "/" + file) << text;
    };
    ext("server.ext", "subjectAltName=DNS:localhost,IP:127.0.0.1\nextendedKeyUsage=serverAuth\n");
    ext("client.ext", "extendedKeyUsage=clientAuth\n");
    run("openssl req -x509 " + key + " -keyout ca.key -out ca.crt -days 2 -subj '/CN=idem test CA'");
    run("openssl req -x509 " + key + " -keyout other.key -out other.crt -days 2 -subj '/CN=another CA'");
    for (const std::string who : {"server", "client"}) {
      run("openssl req " + key + " -keyout " + who + ".key -out " + who + ".csr -subj '/CN=idem " + who +
          "'");
      run("openssl x509 -req -in " + who + ".csr -CA ca.crt -CAkey ca.key -CAcreateserial -out " + who +
          ".crt -days 2 -extfile " + who + ".ext");
    }
  }
  bool ok() const { return ok_; }
  std::string file(const std::string& name) const { return dir_.file(name); }

 private:
  TempDir dir_;
  bool ok_ = true;
};

// The certificates of this test binary (ok() is false when openssl failed).
inline const Certificates& certificates() {
  static const Certificates c;
  return c;
}

}  // namespace idem::testutil
