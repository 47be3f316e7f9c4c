# A throwaway MariaDB server for the tests (Debian's mariadb-server, which speaks MySQL's
# protocol): mariadb-install-db in DIR, listening on 127.0.0.1:13306 (and a unix socket in
# DIR), with a password-protected user "idem" that owns the database "idem" and may create
# others (the shop's demo makes its own). InnoDB flushes at every commit
# (innodb_flush_log_at_trx_commit=1): the durability tests kill clients and rely on
# committed data. The server runs as the `mysql` system user when started as root.
mariadb_port="${IDEM_MARIADB_PORT:-13306}"

mariadb_start() {
  local dir="$1"
  local user_args=()
  if [ "$(id -u)" = 0 ]; then
    chown mysql: "${dir}"
    user_args=(--user=mysql)
  fi
  cat >"${dir}/my.cnf" <<CONF
[mariadbd]
datadir=${dir}/data
socket=${dir}/mysqld.sock
pid-file=${dir}/mysqld.pid
bind-address=127.0.0.1
port=${mariadb_port}
skip-name-resolve
max_connections=500
innodb_flush_log_at_trx_commit=1
innodb_buffer_pool_size=256M
innodb_log_file_size=256M
character-set-server=utf8mb4
collation-server=utf8mb4_bin
log-error=${dir}/server.log
CONF
  if [ ! -d "${dir}/data/mysql" ]; then
    mariadb-install-db --defaults-file="${dir}/my.cnf" "${user_args[@]}" --auth-root-authentication-method=socket \
      --skip-test-db >"${dir}/install.log" 2>&1
  fi
  mariadbd --defaults-file="${dir}/my.cnf" "${user_args[@]}" >/dev/null 2>&1 &
  local i
  for i in $(seq 1 300); do
    mariadb-admin --socket="${dir}/mysqld.sock" -u root ping >/dev/null 2>&1 && break
    sleep 0.1
  done
  mariadb --socket="${dir}/mysqld.sock" -u root <<SQL
CREATE USER IF NOT EXISTS 'idem'@'127.0.0.1' IDENTIFIED BY 'idem';
CREATE USER IF NOT EXISTS 'idem'@'localhost' IDENTIFIED BY 'idem';
CREATE DATABASE IF NOT EXISTS idem;
GRANT ALL PRIVILEGES ON *.* TO 'idem'@'127.0.0.1';
GRANT ALL PRIVILEGES ON *.* TO 'idem'@'localhost';
FLUSH PRIVILEGES;
SQL
  echo "export IDEM_TEST_MYSQL_URL=mysql://idem:idem@127.0.0.1:${mariadb_port}/idem" >>"${env_file}"
  echo "export IDEM_TEST_MYSQL_SOCKET=${dir}/mysqld.sock" >>"${env_file}"
  # For the store's restart test (scripts/test): how to stop and start this server again.
  echo "export IDEM_TEST_MYSQL_DATA=${dir}" >>"${env_file}"
}

mariadb_stop() {
  local dir="$1"
  [ -S "${dir}/mysqld.sock" ] || return 0
  mariadb-admin --socket="${dir}/mysqld.sock" -u root shutdown >/dev/null 2>&1 || true
  local i
  for i in $(seq 1 300); do
    [ -f "${dir}/mysqld.pid" ] || break
    sleep 0.1
  done
}
