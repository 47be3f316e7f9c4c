# A throwaway PostgreSQL 15 cluster for the tests: initdb in DIR, listening on
# 127.0.0.1:15432 (and a unix socket in DIR), with a password-protected user and database
# "idem". fsync stays on: the durability tests kill clients and rely on committed data.
# The server runs as the `postgres` system user (initdb refuses to run as root).
postgres_bin=/usr/lib/postgresql/15/bin
postgres_port="${IDEM_POSTGRES_PORT:-15432}"

postgres_as_owner() {
  if [ "$(id -u)" = 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi
}

postgres_start() {
  local dir="$1"
  [ "$(id -u)" = 0 ] && chown postgres: "${dir}"
  if [ ! -f "${dir}/data/PG_VERSION" ]; then
    local pwfile="${dir}/superuser.pw"
    (umask 077 && echo "idem-super" >"${pwfile}")
    [ "$(id -u)" = 0 ] && chown postgres: "${pwfile}"
    postgres_as_owner "${postgres_bin}/initdb" -D "${dir}/data" -U postgres --pwfile="${pwfile}" \
      --auth-local=trust --auth-host=scram-sha-256 -E UTF8 --locale=C >"${dir}/initdb.log"
    cat >>"${dir}/data/postgresql.conf" <<CONF
listen_addresses = '127.0.0.1'
port = ${postgres_port}
unix_socket_directories = '${dir}'
max_connections = 300
fsync = on
synchronous_commit = on
CONF
  fi
  postgres_as_owner "${postgres_bin}/pg_ctl" -D "${dir}/data" -l "${dir}/server.log" -w -t 60 start >/dev/null
  local i
  for i in $(seq 1 100); do
    "${postgres_bin}/pg_isready" -q -h 127.0.0.1 -p "${postgres_port}" && break
    sleep 0.1
  done
  postgres_as_owner "${postgres_bin}/psql" -q -h "${dir}" -p "${postgres_port}" -U postgres -d postgres \
    -v ON_ERROR_STOP=1 >/dev/null <<SQL
SELECT 'CREATE ROLE idem LOGIN CREATEDB PASSWORD ''idem''' WHERE NOT EXISTS (SELECT FROM pg_roles WHERE rolname = 'idem')
\gexec
SELECT 'CREATE DATABASE idem OWNER idem' WHERE NOT EXISTS (SELECT FROM pg_database WHERE datname = 'idem')
\gexec
SQL
  echo "export IDEM_TEST_POSTGRES_URL=postgres://idem:idem@127.0.0.1:${postgres_port}/idem" >>"${env_file}"
  echo "export IDEM_TEST_POSTGRES_DATA=${dir}/data" >>"${env_file}"
}

postgres_stop() {
  local dir="$1"
  [ -f "${dir}/data/postmaster.pid" ] || return 0
  postgres_as_owner "${postgres_bin}/pg_ctl" -D "${dir}/data" -m fast -w stop >/dev/null
}
