#!/usr/bin/env bash
# `cmake --install` into a fresh prefix (README.md, "Install"): every file where it
# belongs, none outside the prefix, then a program outside the tree built against the
# prefix with find_package(idem) and run, and every installed header compiled on its own
# (ctest -L install_test).
#   install_test.sh BUILD_DIR CMAKE CONSUMER_DIR
set -euo pipefail

build_dir="$1"
cmake="$2"
consumer="$3"
root="$(cd "${consumer}/../../.." && pwd)"

work="$(mktemp -d /tmp/idem-install-test.XXXXXX)"
trap 'rm -rf "${work}"' EXIT
fail() {
  echo "install_test: FAIL: $*" >&2
  for f in "${work}"/*.log; do
    [ -s "$f" ] && { echo "--- $f" >&2; tail -n 30 "$f" >&2; }
  done
  exit 1
}

prefix="${work}/prefix"
# DESTDIR catches a file installed to an absolute path outside the prefix.
DESTDIR="${work}/destdir" "${cmake}" --install "${build_dir}" --prefix "${prefix}" >"${work}/install-destdir.log" 2>&1 ||
  fail "cmake --install with DESTDIR"
outside="$(cd "${work}/destdir" && find . -type f | grep -v "^\.${prefix}/" || true)"
[ -z "${outside}" ] || fail "installed outside the prefix: ${outside}"

"${cmake}" --install "${build_dir}" --prefix "${prefix}" >"${work}/install.log" 2>&1 || fail "cmake --install"
for f in bin/idem share/man/man1/idem.1.gz etc/idem/idem.yaml lib/systemd/system/idem.service \
  share/doc/idem/README.md share/doc/idem/copyright include/idem/store.h include/idem/version.h \
  lib/libidem.a lib/cmake/idem/idemConfig.cmake lib/cmake/idem/idemConfigVersion.cmake; do
  [ -f "${prefix}/$f" ] || fail "${prefix}/$f is missing"
done
[ -x "${prefix}/bin/idem" ] || fail "bin/idem is not executable"
"${prefix}/bin/idem" version >/dev/null || fail "the installed idem does not run"

"${cmake}" -S "${consumer}" -B "${work}/consumer" -G Ninja \
  -DCMAKE_PREFIX_PATH="${prefix}" -DIDEM_EXAMPLE_SOURCE="${root}/examples/guard_demo.cpp" \
  >"${work}/consumer-configure.log" 2>&1 || fail "find_package(idem) against ${prefix}"
"${cmake}" --build "${work}/consumer" >"${work}/consumer-build.log" 2>&1 || fail "building against the prefix"
"${work}/consumer/guard_demo" memory: >"${work}/consumer-run.log" 2>&1 || fail "the program built against the prefix"
echo "install_test: ok"
