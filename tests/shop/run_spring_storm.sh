#!/usr/bin/env bash
# The storm against the Spring shop (examples/spring-shop) as a ctest: shop-storm --spring on the
# RabbitMQ and MariaDB that scripts/services started. The jar is java/verify.sh's (the `java`
# ctest builds it with every module); built here when it is missing. Exits 77 (ctest
# SKIP_RETURN_CODE) without the servers, a JDK or Maven.
#   run_spring_storm.sh STORM SOURCE_DIR [shop-storm flags...]
set -euo pipefail
storm=$1 src=$2
shift 2
for v in IDEM_TEST_MYSQL_URL IDEM_TEST_AMQP_URL; do
  if [ -z "${!v:-}" ]; then
    echo "skipped: ${v} is not set (scripts/services start mariadb rabbitmq)"
    exit 77
  fi
done
if ! command -v java >/dev/null || ! command -v mvn >/dev/null; then
  echo "skipped: no java or mvn (scripts/bootstrap installs them)"
  exit 77
fi
jar="${src}/examples/spring-shop/target/idem-spring-shop.jar"
if [ ! -f "${jar}" ]; then
  mvn -B -ntp -q -f "${src}/java/pom.xml" -pl ../examples/spring-shop -am -DskipTests -Dmaven.javadoc.skip=true \
    -Dmaven.source.skip=true package
fi
exec "${storm}" --spring "${jar}" --db "${IDEM_TEST_MYSQL_URL}" --amqp "${IDEM_TEST_AMQP_URL}" "$@"
