#!/usr/bin/env bash
# Builds and tests the Java engine (docs/java.md): `mvn -B verify` over every module of java/,
# which compiles (-Xlint:all -Werror), runs the tests, and builds the jars, sources and Javadoc.
# The tests read IDEM_BIN (the idem binary, for the control-API and interop tests) and the
# servers' IDEM_TEST_*_URL (scripts/services env); each is skipped without what it needs.
# Exits 77 (ctest's "skipped") on a machine without a JDK or Maven (scripts/bootstrap installs both).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
if ! command -v mvn >/dev/null 2>&1 || ! command -v javac >/dev/null 2>&1; then
  echo "verify.sh: no mvn/javac (apt-get install maven openjdk-17-jdk-headless): skipped" >&2
  exit 77
fi
exec mvn -B -ntp -f "${here}/pom.xml" verify "$@"
