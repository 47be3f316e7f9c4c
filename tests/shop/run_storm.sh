#!/usr/bin/env bash
# The storm as a ctest: shop-storm against the RabbitMQ (and PostgreSQL or MariaDB) that
# scripts/services started. Exits 77 (ctest SKIP_RETURN_CODE) when a service it needs is
# not there, so a machine without them skips instead of failing.
#   run_storm.sh STORM IDEM SHOP CONSUMER CONFIG_DIR [--postgres | --mysql] [shop-storm flags...]
set -euo pipefail
storm=$1 idem=$2 shop=$3 consumer=$4 config_dir=$5
shift 5
db=()
if [ "${1:-}" = "--postgres" ]; then
  shift
  if [ -z "${IDEM_TEST_POSTGRES_URL:-}" ]; then
    echo "skipped: IDEM_TEST_POSTGRES_URL is not set (scripts/services start postgres)"
    exit 77
  fi
  db=(--db "${IDEM_TEST_POSTGRES_URL}")
elif [ "${1:-}" = "--mysql" ]; then
  shift
  if [ -z "${IDEM_TEST_MYSQL_URL:-}" ]; then
    echo "skipped: IDEM_TEST_MYSQL_URL is not set (scripts/services start mariadb)"
    exit 77
  fi
  db=(--db "${IDEM_TEST_MYSQL_URL}")
fi
if [ -z "${IDEM_TEST_AMQP_URL:-}" ]; then
  echo "skipped: IDEM_TEST_AMQP_URL is not set (scripts/services start rabbitmq)"
  exit 77
fi
exec "${storm}" --idem "${idem}" --shop "${shop}" --consumer "${consumer}" --amqp "${IDEM_TEST_AMQP_URL}" \
  --config-dir "${config_dir}" "${db[@]}" "$@"
