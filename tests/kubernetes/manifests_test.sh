#!/usr/bin/env bash
# deploy/kubernetes/ checked without a cluster (docs/operations.md, "Kubernetes"):
#   1. every manifest decoded strictly into the Kubernetes API types (manifests: main.go,
#      k8s.io/api at a version Debian 12's Go builds), the references between its
#      documents followed;
#   2. the idem config each Pod mounts checked with `idem check --strict`, in the
#      environment the Pod gives idem (its values and Secret keys);
#   3. a self-test: a misspelt field, a value of the wrong type, a Secret key that is not
#      there and a misspelt idem config key must each fail the check.
# Usage: manifests_test.sh IDEM_BIN SOURCE_DIR WORK_DIR. Exit 77 (skipped) without Go;
# scripts/bootstrap installs Debian's golang-1.19-go. The Go modules come from the Go
# module proxy (GOPROXY) the first time, pinned by go.sum.
set -euo pipefail
idem="$1" src="$2" work="$3"

go=""
for candidate in "$(command -v go || true)" /usr/lib/go-1.19/bin/go /usr/lib/go/bin/go; do
  if [ -n "${candidate}" ] && [ -x "${candidate}" ]; then go="${candidate}"; break; fi
done
[ -n "${go}" ] || { echo "manifests_test: no Go (apt-get install golang-1.19-go); skipped"; exit 77; }

mkdir -p "${work}"
work="$(cd "${work}" && pwd)"
idem="$(cd "$(dirname "${idem}")" && pwd)/$(basename "${idem}")"
checker="${work}/manifests"
(cd "${src}/tests/kubernetes" && GOFLAGS=-mod=readonly GOTOOLCHAIN=local "${go}" build -o "${checker}" .)

fail() { echo "manifests_test: $*" >&2; exit 1; }

# check DIR FILE...: the checker, then idem check on every config it extracted to DIR.
check() {
  local out="$1"
  shift
  rm -rf "${out}" && mkdir -p "${out}"
  "${checker}" -extract "${out}" "$@" || return 1
  local config found=0
  for config in "${out}"/*.yaml; do
    [ -e "${config}" ] || break
    found=1
    local vars=()
    mapfile -t vars < "${config%.yaml}.env"
    env -i PATH="${PATH}" "${vars[@]}" "${idem}" check --strict "${config}" || return 1
  done
  [ "${found}" = 1 ] || { echo "no idem container in $*" >&2; return 1; }
}

manifests=("${src}"/deploy/kubernetes/*.yaml)
[ "${#manifests[@]}" -ge 2 ] || fail "expected the sidecar and the gateway layouts in deploy/kubernetes/"
check "${work}/extracted" "${manifests[@]}" || fail "deploy/kubernetes/ does not hold"

# The self-test: each mistake must be caught, and say what it is.
mistake() {
  local what="$1" file="$2" from="$3" to="$4" expect="$5"
  local bad="${work}/bad-$(basename "${file}")" log="${work}/bad.log"
  grep -qF -- "${from}" "${file}" || fail "self-test ${what}: '${from}' is not in ${file}"
  python3 - "${file}" "${bad}" "${from}" "${to}" <<'PY'
import sys
src, dst, old, new = sys.argv[1:]
text = open(src).read()
open(dst, "w").write(text.replace(old, new, 1))
PY
  if check "${work}/bad" "${bad}" >"${log}" 2>&1; then
    fail "self-test ${what}: not caught"
  fi
  grep -qF -- "${expect}" "${log}" || { cat "${log}" >&2; fail "self-test ${what}: the message does not say '${expect}'"; }
  echo "self-test: ${what}: caught"
}
sidecar="${src}/deploy/kubernetes/sidecar.yaml"
gateway="${src}/deploy/kubernetes/gateway.yaml"
mistake "a misspelt field" "${sidecar}" "readinessProbe:" "readinesProbe:" 'unknown field "readinesProbe"'
mistake "a value of the wrong type" "${gateway}" "timeoutSeconds: 6" 'timeoutSeconds: "6"' "cannot unmarshal string"
mistake "a repeated key" "${gateway}" "  minAvailable: 1" $'  minAvailable: 1\n  minAvailable: 2' 'already set'
mistake "a Secret key that is not there" "${gateway}" "key: store-uri" "key: store-url" "no key store-url"
mistake "a Service port that is not the container's" "${gateway}" "targetPort: http" "targetPort: htp" "no container port htp"
mistake "a misspelt idem config key" "${sidecar}" "on_store_error: pass" "on_store_eror: pass" "on_store_eror"
echo "manifests_test: ${#manifests[@]} files ok"
