#!/usr/bin/env bash
# The storm as a ctest: shop-storm against the RabbitMQ (and PostgreSQL or MariaDB) that
# scripts/services started. Exits 77 (ctest SKIP_RETURN_CODE) when a service it needs is
# not there, so a machine without them skips instead of failing.
#   run_storm.sh STORM IDEM SHOP CONSUMER CONFIG_DIR [--postgres | --mysql] [shop-storm flags...]
set -euo pipefail
storm=$1 idem=$2 shop=$3 consumer=$4 config_dir=$5
shift 5
db=()
case "${1:-}" in
  --postgres) service=postgres url_var=IDEM_TEST_POSTGRES_URL ;;
  --mysql) service=mariadb url_var=IDEM_TEST_MYSQL_URL ;;
  *) url_var="" ;;
esac
if [ -n "${url_var}" ]; then
  shift
  if [ -z "${!url_var:-}" ]; then
    echo "skipped: ${url_var} is not set (scripts/services start ${service})"
    exit 77
  fi
  db=(--db "${!url_var}")
fi
if [ -z "${IDEM_TEST_AMQP_URL:-}" ]; then
  echo "skipped: IDEM_TEST_AMQP_URL is not set (scripts/services start rabbitmq)"
  exit 77
fi
exec "${storm}" --idem "${idem}" --shop "${shop}" --consumer "${consumer}" --amqp "${IDEM_TEST_AMQP_URL}" \
  --config-dir "${config_dir}" "${db[@]}" "$@"
