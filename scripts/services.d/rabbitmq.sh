# RabbitMQ for the shop's tests (sourced by scripts/services): one private node listening
# for AMQP on 127.0.0.1:25673 (IDEM_RABBITMQ_PORT moves it), with every file (database,
# logs, pid file, feature flags, plugins list, Erlang cookie) under the service's
# directory, so it never meets a system-wide RabbitMQ.
# Ports, all derived from the AMQP port P so that two instances do not clash:
#   P          AMQP                      (a system RabbitMQ uses 5672)
#   P + 20000  Erlang distribution        (a system RabbitMQ uses 25672)
#   P + 30000  rabbitmqctl's own node (+0..10)
#   P + 2      a private epmd            (a system one listens on 4369)
# The server runs as the `rabbitmq` system user when started as root (as the Debian
# wrapper would; the Erlang cookie must belong to the user that reads it).
rabbitmq_port="${IDEM_RABBITMQ_PORT:-25673}"
rabbitmq_lib=/usr/lib/rabbitmq/bin

# rabbitmq_env DIR: the environment the server and rabbitmqctl share, as `env` arguments.
rabbitmq_env() {
  local dir="$1"
  echo "HOME=${dir}" \
    "RABBITMQ_NODENAME=idem-${rabbitmq_port}@localhost" \
    "RABBITMQ_NODE_IP_ADDRESS=127.0.0.1" \
    "RABBITMQ_NODE_PORT=${rabbitmq_port}" \
    "RABBITMQ_DIST_PORT=$((rabbitmq_port + 20000))" \
    "RABBITMQ_CTL_DIST_PORT_MIN=$((rabbitmq_port + 30000))" \
    "RABBITMQ_CTL_DIST_PORT_MAX=$((rabbitmq_port + 30010))" \
    "ERL_EPMD_PORT=$((rabbitmq_port + 2))" \
    "ERL_EPMD_ADDRESS=127.0.0.1" \
    "RABBITMQ_CONF_ENV_FILE=${dir}/rabbitmq-env.conf" \
    "RABBITMQ_CONFIG_FILE=${dir}/rabbitmq.conf" \
    "RABBITMQ_ADVANCED_CONFIG_FILE=${dir}/advanced.config" \
    "RABBITMQ_MNESIA_BASE=${dir}/mnesia" \
    "RABBITMQ_LOG_BASE=${dir}/log" \
    "RABBITMQ_FEATURE_FLAGS_FILE=${dir}/feature_flags" \
    "RABBITMQ_ENABLED_PLUGINS_FILE=${dir}/enabled_plugins" \
    "RABBITMQ_PID_FILE=${dir}/rabbitmq.pid"
}

# rabbitmq_run DIR COMMAND [ARGS...]: runs a RabbitMQ script as the server's owner.
rabbitmq_run() {
  local dir="$1" script="$2"
  shift 2
  # shellcheck disable=SC2046  # rabbitmq_env's words are meant to split (no spaces in DIR)
  if [ "$(id -u)" = 0 ]; then
    (cd "${dir}" && runuser -u rabbitmq -- env $(rabbitmq_env "${dir}") "${rabbitmq_lib}/${script}" "$@")
  else
    (cd "${dir}" && env $(rabbitmq_env "${dir}") "${rabbitmq_lib}/${script}" "$@")
  fi
}

rabbitmq_node() { echo "idem-${rabbitmq_port}@localhost"; }

rabbitmq_start() {
  local dir="$1"
  mkdir -p "${dir}/mnesia" "${dir}/log"
  echo "${rabbitmq_port}" >"${dir}/port"  # for rabbitmq_stop, whatever its environment
  # Erlang distribution on loopback only (it listens on every interface by default).
  # shellcheck disable=SC2016
  echo 'SERVER_ADDITIONAL_ERL_ARGS="-kernel inet_dist_use_interface {127,0,0,1}"' >"${dir}/rabbitmq-env.conf"
  echo '[].' >"${dir}/enabled_plugins"  # no plugins: no management listener, a faster start
  echo '[].' >"${dir}/advanced.config"
  # The default user guest may only connect from loopback, which is where the tests are.
  # A low disk limit: CI disks can be small and the tests store little.
  printf 'disk_free_limit.absolute = 50MB\n' >"${dir}/rabbitmq.conf"
  (umask 077 && head -c 24 /dev/urandom | od -An -tx1 | tr -d ' \n' >"${dir}/.erlang.cookie")
  chmod 400 "${dir}/.erlang.cookie"
  [ "$(id -u)" = 0 ] && chown -R rabbitmq: "${dir}"

  # In the background, in a session of its own (it outlives scripts/services); the script
  # stays as the parent of the Erlang VM, whose pid the server writes to rabbitmq.pid.
  rabbitmq_run "${dir}" rabbitmq-server </dev/null >"${dir}/server.out" 2>&1 &
  echo $! >"${dir}/launcher.pid"

  # `rabbitmqctl wait` returns once the pid file exists and the broker has booted.
  if ! rabbitmq_run "${dir}" rabbitmqctl -q -n "$(rabbitmq_node)" wait "${dir}/rabbitmq.pid" --timeout 60 \
    >"${dir}/wait.log" 2>&1; then
    echo "rabbitmq: the node on port ${rabbitmq_port} did not start within 60 s:" >&2
    tail -n 20 "${dir}/wait.log" "${dir}/server.out" "${dir}"/log/*.log >&2 2>/dev/null || true
    return 1
  fi
  echo "export IDEM_TEST_AMQP_URL=amqp://guest:guest@127.0.0.1:${rabbitmq_port}/" >>"${env_file}"
}

rabbitmq_stop() {
  local dir="$1" pid="" launcher="" i
  # The node, its rabbitmqctl and its epmd are on the ports it was started with.
  [ -f "${dir}/port" ] && rabbitmq_port="$(cat "${dir}/port")"
  [ -f "${dir}/rabbitmq.pid" ] && pid="$(cat "${dir}/rabbitmq.pid")"
  [ -f "${dir}/launcher.pid" ] && launcher="$(cat "${dir}/launcher.pid")"
  if [ -n "${pid}" ] && kill -0 "${pid}" 2>/dev/null; then
    rabbitmq_run "${dir}" rabbitmqctl -q -n "$(rabbitmq_node)" stop >/dev/null 2>&1 || true
    for i in $(seq 1 150); do
      kill -0 "${pid}" 2>/dev/null || break
      sleep 0.1
    done
    kill -9 "${pid}" 2>/dev/null || true
  fi
  # The launcher (runuser and the server script) ends with the VM; if the VM never wrote
  # its pid file, the launcher's process group is all there is to end.
  if [ -n "${launcher}" ] && kill -0 "${launcher}" 2>/dev/null; then
    kill -TERM "${launcher}" 2>/dev/null || true
    for i in $(seq 1 50); do
      kill -0 "${launcher}" 2>/dev/null || break
      sleep 0.1
    done
    kill -9 "${launcher}" 2>/dev/null || true
  fi
  # The Erlang VM started a private epmd on its own port; nothing else uses it.
  ERL_EPMD_PORT=$((rabbitmq_port + 2)) epmd -kill >/dev/null 2>&1 || true
}
