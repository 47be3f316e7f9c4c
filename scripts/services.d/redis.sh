# Redis for the tests (sourced by scripts/services): a standalone server on
# 127.0.0.1:16379 and a Cluster of 3 masters + 3 replicas on 127.0.0.1:17001-17006
# (IDEM_REDIS_PORT and IDEM_REDIS_CLUSTER_PORT move them).
# Every file (config, data, AOF, logs, pid files) lives under the service's directory, so
# stopping never needs anything global: it kills exactly the pids it recorded.

redis_standalone_port="${IDEM_REDIS_PORT:-16379}"
redis_cluster_first="${IDEM_REDIS_CLUSTER_PORT:-17001}"  # and the next five
redis_cluster_ports=()
for i in 0 1 2 3 4 5; do redis_cluster_ports+=($((redis_cluster_first + i))); done

# redis_server DIR PORT [extra redis-server options...]: one daemonized server in DIR/PORT.
redis_server() {
  local dir="$1" port="$2"
  shift 2
  mkdir -p "${dir}/${port}"
  redis-server --port "${port}" --bind 127.0.0.1 --daemonize yes \
    --dir "${dir}/${port}" --pidfile "${dir}/${port}/redis.pid" --logfile "${dir}/${port}/redis.log" \
    --appendonly yes --save '' "$@"
}

# redis_wait PORT: until the server answers PING (10 s at most).
redis_wait() {
  local port="$1" i
  for i in $(seq 1 100); do
    if [ "$(redis-cli -p "${port}" ping 2>/dev/null)" = "PONG" ]; then return 0; fi
    sleep 0.1
  done
  echo "redis: the server on port ${port} did not start; see its log" >&2
  return 1
}

redis_start() {
  local dir="$1" port nodes=()
  redis_server "${dir}" "${redis_standalone_port}"
  for port in "${redis_cluster_ports[@]}"; do
    # A short node timeout so that failovers in the tests take seconds, not a minute.
    redis_server "${dir}" "${port}" --cluster-enabled yes --cluster-config-file "${dir}/${port}/nodes.conf" \
      --cluster-node-timeout 2000
    nodes+=("127.0.0.1:${port}")
  done
  redis_wait "${redis_standalone_port}"
  for port in "${redis_cluster_ports[@]}"; do redis_wait "${port}"; done

  redis-cli --cluster create "${nodes[@]}" --cluster-replicas 1 --cluster-yes >"${dir}/cluster-create.log" 2>&1 || {
    cat "${dir}/cluster-create.log" >&2
    return 1
  }
  local i ok
  for i in $(seq 1 300); do
    ok=1
    for port in "${redis_cluster_ports[@]}"; do
      redis-cli -p "${port}" cluster info 2>/dev/null | grep -q '^cluster_state:ok' || ok=0
    done
    [ "${ok}" = 1 ] && break
    sleep 0.1
  done
  if [ "${ok}" != 1 ]; then
    echo "redis: the cluster did not reach cluster_state:ok" >&2
    return 1
  fi
  {
    echo "export IDEM_TEST_REDIS_URL=redis://127.0.0.1:${redis_standalone_port}"
    echo "export IDEM_TEST_REDIS_CLUSTER_URL=redis-cluster://127.0.0.1:${redis_cluster_ports[0]},127.0.0.1:${redis_cluster_ports[1]},127.0.0.1:${redis_cluster_ports[2]}"
  } >>"${env_file}"
}

redis_stop() {
  local dir="$1" pidfile pid i
  for pidfile in "${dir}"/*/redis.pid; do
    [ -f "${pidfile}" ] || continue
    pid="$(cat "${pidfile}")"
    kill "${pid}" 2>/dev/null || continue
    for i in $(seq 1 50); do
      kill -0 "${pid}" 2>/dev/null || break
      sleep 0.1
    done
    kill -9 "${pid}" 2>/dev/null || true
  done
}
