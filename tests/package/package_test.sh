#!/usr/bin/env bash
# The idem .deb on this machine (ctest -L package; README.md, "Install"): built with CPack
# from the build (or taken from IDEM_DEB), installed with dpkg, its files, user, state
# directory and conffile checked, then the installed unit's ExecStart run as systemd would
# run it (its User, Group, WorkingDirectory, EnvironmentFile, UMask, no privileges) in
# front of the test upstream: /readyz, a protected POST twice (one execution, a replay),
# the SQLite file in /var/lib/idem owned by idem, SIGTERM and exit 0. Last, dpkg --purge
# must leave nothing: no binary, no user, no state. With idem-dev built alongside, it is
# installed too, a program built against it with find_package(idem), and purged.
#   package_test.sh BUILD_DIR CPACK TEST_UPSTREAM VERSION
# Runs as root (it installs a package and adds a user), else exits 77 (skipped); also
# skipped where dpkg is missing or an idem package or user exists already (not ours to
# remove).
set -euo pipefail

build_dir="$1"
cpack="$2"
upstream_bin="$3"
version="$4"

skip() {
  echo "package_test: skipped: $*"
  exit 77
}
fail() {
  echo "package_test: FAIL: $*" >&2
  for f in "${work}"/*.log; do
    [ -s "$f" ] && { echo "--- $f" >&2; tail -n 30 "$f" >&2; }
  done
  exit 1
}

[ "$(id -u)" = 0 ] || skip "not root"
for tool in dpkg dpkg-deb dpkg-query setpriv curl; do
  command -v "${tool}" >/dev/null || skip "no ${tool}"
done
for p in idem idem-dev; do
  if dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -qv 'not-installed'; then
    skip "an $p package is on this machine already"
  fi
done
getent passwd idem >/dev/null && skip "a user idem exists already"
getent group idem >/dev/null && skip "a group idem exists already"
[ -e /var/lib/idem ] && skip "/var/lib/idem exists already"
[ -e /etc/default/idem ] && skip "/etc/default/idem exists already"

work="$(mktemp -d /tmp/idem-package-test.XXXXXX)"
# Where systemd runs, postinst would start the service on the default ports, and restart
# it on the test's: masked until the next boot or the end of the test, the unit is only
# read, and its ExecStart run here.
masked=0
if [ -d /run/systemd/system ] && command -v systemctl >/dev/null; then
  systemctl mask --runtime idem.service >/dev/null 2>&1 && masked=1
fi
pids=()
installed=0
# dpkg runs without triggers (man-db's index update costs 10 s a run); the ones they
# left pending run once at the end.
cleanup() {
  for p in "${pids[@]}"; do
    { kill -9 "$p" && wait "$p"; } 2>/dev/null || true
  done
  if [ "${installed}" = 1 ]; then dpkg --purge --no-triggers idem idem-dev >/dev/null 2>&1 || true; fi
  dpkg --triggers-only --pending >/dev/null 2>&1 || true
  if [ "${masked}" = 1 ]; then systemctl unmask --runtime idem.service >/dev/null 2>&1 || true; fi
  rm -rf "${work}"
}
trap cleanup EXIT

# A port nothing listens on (bash's /dev/tcp: a refused connection), below the kernel's
# ephemeral range (32768 and up), where an outgoing connection may hold a port that
# refuses connections yet cannot be bound; and away from the e2e tests' ports (20000-24999)
# and those of scripts/services.
free_port() {
  local p
  for _ in $(seq 100); do
    p=$((26000 + RANDOM % 6000))
    if ! (exec 3<>"/dev/tcp/127.0.0.1/${p}") 2>/dev/null; then
      echo "${p}"
      return
    fi
  done
  fail "no free port"
}

# --- the package
deb="${IDEM_DEB:-}"
if [ -z "${deb}" ]; then
  "${cpack}" --config "${build_dir}/CPackConfig.cmake" -B "${work}/deb" >"${work}/cpack.log" 2>&1 || fail "cpack"
  deb="$(ls "${work}"/deb/idem_*.deb)"
fi
[ -f "${deb}" ] || fail "no package at ${deb}"
[ "$(dpkg-deb -f "${deb}" Package)" = idem ] || fail "the package is not called idem"
[ "$(dpkg-deb -f "${deb}" Version)" = "${version}" ] || fail "version $(dpkg-deb -f "${deb}" Version), not ${version}"
# dpkg-shlibdeps found the libraries the binary links.
depends="$(dpkg-deb -f "${deb}" Depends)"
for lib in libc6 libsystemd0 libsqlite3-0 libtcmalloc-minimal4 adduser; do
  [[ "${depends}" == *"${lib}"* ]] || fail "Depends: ${depends} lacks ${lib}"
done
# Neither the library nor headers: they are idem-dev's.
if dpkg-deb -c "${deb}" | grep -E 'include/idem|libidem|cmake/idem'; then fail "library files in the idem package"; fi

dpkg -i --no-triggers "${deb}" >"${work}/dpkg-install.log" 2>&1 || fail "dpkg -i"
installed=1

# --- its files
for f in /usr/bin/idem /usr/share/man/man1/idem.1.gz /lib/systemd/system/idem.service /etc/idem/idem.yaml \
  /usr/share/doc/idem/copyright /usr/share/doc/idem/README.md; do
  [ -f "$f" ] || fail "$f is missing"
done
[ "$(/usr/bin/idem version)" = "idem ${version}" ] || fail "idem version: $(/usr/bin/idem version)"
zgrep -q "^\.TH IDEM 1 .*\"idem ${version}\"" /usr/share/man/man1/idem.1.gz || fail "idem.1.gz is not the man page of ${version}"
dpkg-query -W -f='${Conffiles}\n' idem | grep -q '^ /etc/idem/idem.yaml ' || fail "/etc/idem/idem.yaml is not a conffile"
grep -q '^store: sqlite:/var/lib/idem/idem.db' /etc/idem/idem.yaml || fail "the default config's store"

# --- the user, the state directory, the generated secrets
IFS=: read -r _ _ uid gid _ home shell <<<"$(getent passwd idem)" || fail "no user idem"
getent group idem >/dev/null || fail "no group idem"
[ "${gid}" = "$(getent group idem | cut -d: -f3)" ] || fail "idem's group is not idem"
[ "${uid}" -lt 1000 ] || fail "idem is not a system user (uid ${uid})"
[ "${home}" = /var/lib/idem ] || fail "idem's home is ${home}"
[[ "${shell}" == */nologin || "${shell}" == /bin/false ]] || fail "idem may log in (${shell})"
[ "$(stat -c '%U:%G %a' /var/lib/idem)" = "idem:idem 750" ] || fail "/var/lib/idem: $(stat -c '%U:%G %a' /var/lib/idem)"
[ "$(stat -c '%U %a' /etc/default/idem)" = "root 600" ] || fail "/etc/default/idem: $(stat -c '%U %a' /etc/default/idem)"
grep -Eq '^IDEM_ADMIN_TOKEN=[0-9a-f]{64}$' /etc/default/idem || fail "no random admin token in /etc/default/idem"
grep -Eq '^IDEM_KEY_HASH_SECRET=[0-9a-f]{64}$' /etc/default/idem || fail "no random key_hash secret in /etc/default/idem"
# The shipped config is valid as it stands, with the shipped secrets.
(set -a && . /etc/default/idem && /usr/bin/idem check /etc/idem/idem.yaml) >"${work}/check.log" 2>&1 ||
  fail "idem check /etc/idem/idem.yaml"
if command -v systemd-analyze >/dev/null; then
  # Documentation=man:idem(1) is checked where man is installed.
  man_check=()
  command -v man >/dev/null || man_check=(--man=no)
  systemd-analyze verify "${man_check[@]}" /lib/systemd/system/idem.service >"${work}/verify.log" 2>&1 ||
    fail "systemd-analyze verify idem.service"
fi

# --- an admin's edit: the test upstream and free ports; a reinstall keeps it (a conffile)
"${upstream_bin}" >"${work}/upstream.port" 2>"${work}/upstream.log" &
pids+=($!)
for _ in $(seq 200); do
  [ -s "${work}/upstream.port" ] && break
  sleep 0.05
done
upstream_port="$(head -n1 "${work}/upstream.port")"
[ -n "${upstream_port}" ] || fail "the test upstream did not start"
port="$(free_port)"
admin="$(free_port)"
sed -i -e "s|^listen: .*|listen: 127.0.0.1:${port}|" -e "s|^upstream: .*|upstream: http://127.0.0.1:${upstream_port}|" \
  -e "s|^  listen: 127.0.0.1:9901|  listen: 127.0.0.1:${admin}|" /etc/idem/idem.yaml
dpkg -i --no-triggers "${deb}" >"${work}/dpkg-reinstall.log" 2>&1 || fail "dpkg -i again"
grep -q "^listen: 127.0.0.1:${port}\$" /etc/idem/idem.yaml || fail "a reinstall replaced the edited conffile"
token="package-test-token-$$"
printf '# written by package_test.sh\nIDEM_ADMIN_TOKEN=%s\n' "${token}" >/etc/default/idem

# --- ExecStart as systemd runs it: the unit's user, directory and environment file only
unit=/lib/systemd/system/idem.service
key() { sed -n "s/^$1=//p" "${unit}" | tail -n1; }
exec_start="$(key ExecStart)"
user="$(key User)"
group="$(key Group)"
workdir="$(key WorkingDirectory)"
envfile="$(key EnvironmentFile)"
umask_="$(key UMask)"
[ "${user}" = idem ] && [ "${group}" = idem ] || fail "the unit runs as ${user}:${group}"
[ "$(key Type)" = notify ] || fail "the unit is not Type=notify"
[ "$(key StateDirectory)" = idem ] || fail "the unit's StateDirectory"
env_args=()
if [ -n "${envfile}" ]; then
  optional=0
  [[ "${envfile}" == -* ]] && optional=1 && envfile="${envfile#-}"
  if [ -f "${envfile}" ]; then
    while IFS= read -r line; do
      [[ "${line}" =~ ^[[:space:]]*(#|$) ]] && continue
      env_args+=("${line}")
    done <"${envfile}"
  elif [ "${optional}" = 0 ]; then
    fail "EnvironmentFile ${envfile} is missing"
  fi
fi
read -r -a command <<<"${exec_start}"
# No capabilities (CapabilityBoundingSet= empty), where this machine lets us drop them.
no_caps=(--inh-caps=-all --bounding-set=-all)
setpriv "${no_caps[@]}" true 2>/dev/null || no_caps=()
(
  cd "${workdir}"
  umask "${umask_:-0022}"
  exec env -i PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin HOME="${workdir}" USER="${user}" \
    LOGNAME="${user}" "${env_args[@]}" \
    setpriv --reuid="${user}" --regid="${group}" --init-groups --no-new-privs "${no_caps[@]}" -- "${command[@]}"
) >"${work}/idem-stdout.log" 2>"${work}/idem.log" &
idem_pid=$!
pids+=("${idem_pid}")

ready=0
for _ in $(seq 200); do
  if [ "$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:${admin}/readyz")" = 200 ]; then
    ready=1
    break
  fi
  kill -0 "${idem_pid}" 2>/dev/null || fail "idem serve exited"
  sleep 0.05
done
[ "${ready}" = 1 ] || fail "/readyz did not answer 200"
[ "$(stat -c %U "/proc/${idem_pid}")" = idem ] || fail "idem serve does not run as idem"

post() {
  curl -s -D "${work}/headers" -o "${work}/body" -w '%{http_code}' -X POST -H 'Idempotency-Key: pkg-1' \
    -H 'Content-Type: application/json' --data '{"sku":"a","qty":1}' "http://127.0.0.1:${port}/orders"
}
[ "$(post)" = 201 ] || fail "the first POST"
first="$(cat "${work}/body")"
grep -qi '^Idempotent-Replayed: true' "${work}/headers" && fail "the first POST was a replay"
[ "$(post)" = 201 ] || fail "the second POST"
grep -qi '^Idempotent-Replayed: true' "${work}/headers" || fail "the second POST was not a replay"
[ "$(cat "${work}/body")" = "${first}" ] || fail "the replay's body differs"
[ "$(curl -s "http://127.0.0.1:${upstream_port}/_count?key=pkg-1")" = 1 ] || fail "the upstream ran the POST more than once"
# The admin token came from the EnvironmentFile.
[ "$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:${admin}/v1/records")" = 401 ] ||
  fail "the records without a token"
[ "$(curl -s -o /dev/null -w '%{http_code}' -H "Authorization: Bearer ${token}" \
  "http://127.0.0.1:${admin}/v1/records")" = 200 ] || fail "the records with the token"
[ -f /var/lib/idem/idem.db ] || fail "no /var/lib/idem/idem.db"
[ "$(stat -c '%U:%G' /var/lib/idem/idem.db)" = idem:idem ] || fail "idem.db: $(stat -c '%U:%G' /var/lib/idem/idem.db)"
[ "$(($(stat -c '%#a' /var/lib/idem/idem.db) & 8#007))" = 0 ] || fail "idem.db is readable by others (UMask)"

kill -TERM "${idem_pid}"
rc=0
wait "${idem_pid}" || rc=$?
[ "${rc}" = 0 ] || fail "idem serve exited ${rc} on SIGTERM"

# --- purge: nothing left
dpkg --purge --no-triggers idem >"${work}/dpkg-purge.log" 2>&1 || fail "dpkg --purge"
installed=0
for f in /usr/bin/idem /usr/share/man/man1/idem.1.gz /lib/systemd/system/idem.service /etc/idem /etc/default/idem \
  /var/lib/idem /usr/share/doc/idem; do
  [ ! -e "$f" ] || fail "$f is left after the purge"
done
getent passwd idem >/dev/null && fail "the user idem is left after the purge"
getent group idem >/dev/null && fail "the group idem is left after the purge"
dpkg-query -W -f='${Status}' idem 2>/dev/null | grep -q 'not-installed' ||
  [ -z "$(dpkg-query -W -f='${Status}' idem 2>/dev/null)" ] || fail "dpkg still knows idem"
# --- idem-dev, when it was built alongside: find_package(idem) from /usr
dev_deb="$(ls "$(dirname "${deb}")"/idem-dev_*.deb 2>/dev/null | head -n1 || true)"
if [ -n "${dev_deb}" ]; then
  here="$(cd "$(dirname "$0")" && pwd)"
  installed=1
  dpkg -i --no-triggers "${dev_deb}" >"${work}/dpkg-dev.log" 2>&1 || fail "dpkg -i ${dev_deb##*/}"
  for f in /usr/include/idem/store.h /usr/include/idem/version.h /usr/lib/libidem.a /usr/lib/cmake/idem/idemConfig.cmake; do
    [ -f "$f" ] || fail "$f is missing"
  done
  cmake="$(dirname "$(command -v "${cpack}")")/cmake"
  "${cmake}" -S "${here}/consumer" -B "${work}/consumer" -G Ninja \
    -DIDEM_EXAMPLE_SOURCE="${here}/../../examples/guard_demo.cpp" >"${work}/consumer.log" 2>&1 ||
    fail "find_package(idem) from idem-dev"
  "${cmake}" --build "${work}/consumer" >>"${work}/consumer.log" 2>&1 || fail "building against idem-dev"
  "${work}/consumer/guard_demo" memory: >>"${work}/consumer.log" 2>&1 || fail "the program built against idem-dev"
  dpkg --purge --no-triggers idem-dev >"${work}/dpkg-dev-purge.log" 2>&1 || fail "dpkg --purge idem-dev"
  installed=0
  [ ! -e /usr/include/idem ] && [ ! -e /usr/lib/libidem.a ] && [ ! -e /usr/lib/cmake/idem ] ||
    fail "idem-dev's files are left after the purge"
fi
echo "package_test: ok (${deb##*/}${dev_deb:+, ${dev_deb##*/}})"
