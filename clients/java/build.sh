#!/usr/bin/env bash
# Builds the Java client of the control API (docs/java.md) with the JDK alone:
#   clients/java/build.sh           build/idem-client.jar and build/idem-examples.jar
#   clients/java/build.sh test      also compiles the JUnit 5 tests and runs them with the
#                                   console launcher against a real `idem serve` ($IDEM_BIN)
# IDEM_JAVA_BUILD_DIR puts the output elsewhere (ctest: the CMake build tree).
# Exits 77 (ctest's "skipped") when there is no javac; needs Debian's junit5 for `test`.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
out="${IDEM_JAVA_BUILD_DIR:-${here}/build}"

if ! command -v javac >/dev/null 2>&1 || ! command -v jar >/dev/null 2>&1; then
  echo "build.sh: no javac/jar (apt-get install openjdk-17-jdk-headless): skipped" >&2
  exit 77
fi

# Short-lived JVMs start several times faster with the client compiler alone and the serial
# collector (javac here: 3 s instead of 9 on a loaded machine).
jvm=(-XX:TieredStopAtLevel=1 -XX:+UseSerialGC)
jflags=("${jvm[@]/#/-J}")
javac_flags=("${jflags[@]}" --release 17 -encoding UTF-8 -Xlint:all -Werror)
rm -rf "${out}/classes" "${out}/examples" "${out}/tests"
mkdir -p "${out}/classes" "${out}/examples" "${out}/tests"

find "${here}/src/main/java" -name '*.java' | sort >"${out}/main.sources"
javac "${javac_flags[@]}" -d "${out}/classes" @"${out}/main.sources"
jar "${jflags[@]}" --create --file "${out}/idem-client.jar" -C "${out}/classes" .

find "${here}/examples" -name '*.java' | sort >"${out}/examples.sources"
javac "${javac_flags[@]}" -cp "${out}/idem-client.jar" -d "${out}/examples" @"${out}/examples.sources"
jar "${jflags[@]}" --create --file "${out}/idem-examples.jar" -C "${out}/examples" .
echo "build.sh: ${out}/idem-client.jar, ${out}/idem-examples.jar"

[ "${1:-}" = test ] || exit 0

launcher=/usr/share/java/junit-platform-console-standalone.jar
if [ ! -f "${launcher}" ]; then
  echo "build.sh: ${launcher} missing (apt-get install junit5)" >&2
  exit 1
fi
if [ -z "${IDEM_BIN:-}" ] || [ ! -x "${IDEM_BIN}" ]; then
  echo "build.sh: set IDEM_BIN to the idem binary (cmake --build build/release --target idem_cli)" >&2
  exit 1
fi
cp="${out}/idem-client.jar:${out}/idem-examples.jar:${launcher}"
find "${here}/src/test/java" -name '*.java' | sort >"${out}/test.sources"
# The tests sit in the client's package (they reach package-private helpers); -Xlint minus
# the serial and try warnings JUnit's style of tests trips.
javac "${jflags[@]}" --release 17 -encoding UTF-8 -Xlint:all,-serial,-try -Werror -cp "${cp}" -d "${out}/tests" @"${out}/test.sources"
exec java "${jvm[@]}" -Didem.bin="${IDEM_BIN}" -Djava.io.tmpdir="${TMPDIR:-/tmp}" -jar "${launcher}" \
  --class-path "${out}/idem-client.jar:${out}/idem-examples.jar:${out}/tests" \
  --scan-class-path "${out}/tests" --disable-banner --disable-ansi-colors --details=tree --fail-if-no-tests ${IDEM_JAVA_TEST_ARGS:-}
