#!/usr/bin/env bash
# The deployment files checked as far as this machine can:
#   - every sample config (deploy/conf/*.conf) passes `sumcache -t`, and a
#     misspelled directive in one is refused with its file and line;
#   - the systemd unit passes `systemd-analyze verify` (pointed at the
#     built binary), and a broken copy does not;
#   - the container image installs a Debian package for every library the
#     binary is linked against, its build stage one for every pkg-config
#     module CMakeLists.txt asks for, and its config passes `sumcache -t`;
#   - the Kubernetes manifests pass yamllint, hang together (the
#     StatefulSet's headless Service is the name peer_dns resolves, on the
#     container's port; selectors match the pods; the mounts hold the
#     config and key paths the arguments and config name; the pods run as
#     the image's user) and the ConfigMap's config passes `sumcache -t`.
# BUILD names the build directory (build-test).
# Prints "deploy-check: P passed, F failed".
set -uo pipefail
cd "$(dirname "$0")/.."
. tests/checks.sh deploy-check
bin=$(realpath "$build/sumcache")
refused() { ! "$@"; }

head -c 32 /dev/urandom | base64 >"$dir/cluster.key"
conf_ok() {  # conf_ok FILE: sumcache -t, with a key file that exists
  local key=()
  grep -q '^cluster_key_file' "$1" && key=(-o "cluster_key_file=$dir/cluster.key")
  "$bin" -t -c "$1" "${key[@]}"
}

# ---- sample configs
for f in deploy/conf/*.conf; do
  check "$f passes sumcache -t" conf_ok "$f"
done
sed 's/^cache_mem/cache_memory/' deploy/conf/standalone.conf >"$dir/typo.conf"
conf_ok "$dir/typo.conf" >"$dir/typo.err" 2>&1
check "a misspelled directive is refused" [ $? -ne 0 ]
typo_line=$(grep -n '^cache_memory' "$dir/typo.conf" | cut -d: -f1)
check "... with its file and line" \
  grep -q "typo.conf:$typo_line: unknown directive 'cache_memory'" \
  "$dir/typo.err"

# ---- systemd
unit=deploy/systemd/sumcache.service
sed "s|/usr/sbin/sumcache|$bin|g" "$unit" >"$dir/sumcache.service"
# the unit's Documentation= names the manual pages, which verify looks up
# with man: the built ones, as the package installs them
mkdir -p "$dir/man/man8" "$dir/man/man5"
cp "$build/man/sumcache.8" "$dir/man/man8/"
cp "$build/man/sumcache.conf.5" "$dir/man/man5/"
verify() {  # systemd-analyze verify, which must not even warn
  local said
  said=$(MANPATH=$(realpath "$dir/man") systemd-analyze verify "$1" 2>&1) ||
    { echo "$said"; return 1; }
  [ -z "$said" ] || { echo "$said"; return 1; }
}
check "$unit passes systemd-analyze verify" verify "$dir/sumcache.service"
sed 's/^KillSignal=SIGTERM/KillSignal=SIGNOPE/' "$dir/sumcache.service" \
  >"$dir/broken.service"
check "a unit with a bad signal does not" refused verify "$dir/broken.service"
check "the unit checks the config before it starts" \
  grep -q "^ExecStartPre=.*sumcache -t -c /etc/sumcache/sumcache.conf" "$unit"

# ---- container image
cf=deploy/container/Containerfile
stage() {  # the packages apt-get installs in stage N (1 or 2) of $cf
  awk -v n="$1" '/^FROM /{s++} s == n' "$cf" | sed ':a;/\\$/{N;s/\\\n/ /;ba}' |
    grep -o 'apt-get install[^&]*' | tr ' ' '\n' |
    grep -v -e '^-' -e '^$' -e '^apt-get$' -e '^install$' | sort -u
}
stage 1 >"$dir/build.pkgs"
stage 2 >"$dir/run.pkgs"
package_of() {  # the Debian package that holds file $1 (or its target)
  { dpkg -S "$1" || dpkg -S "$(realpath "$1")"; } 2>/dev/null |
    head -n 1 | cut -d: -f1
}
runtime_libs_installed() {
  local lib path pkg missing=0
  for lib in $(objdump -p "$bin" | awk '/NEEDED/ {print $2}'); do
    path=$(ldd "$bin" | awk -v l="$lib" '$1 == l {print $3}')
    pkg=$(package_of "$path")
    [ "$pkg" = libc6 ] && continue  # in every Debian image
    if ! grep -qx "$pkg" "$dir/run.pkgs"; then
      echo "$lib ($pkg) is not installed by the runtime stage"; missing=1
    fi
  done
  return $missing
}
check "the image installs every library sumcache is linked against" \
  runtime_libs_installed
build_deps_installed() {
  local mod pc pkg missing=0
  for mod in $(grep -o 'IMPORTED_TARGET [a-z0-9_ -]*)' CMakeLists.txt |
               sed 's/IMPORTED_TARGET//; s/)//'); do
    pc=$(pkg-config --variable=pcfiledir "$mod")/$mod.pc
    pkg=$(package_of "$pc")
    if ! grep -qx "$pkg" "$dir/build.pkgs"; then
      echo "pkg-config $mod ($pkg) is not installed by the build stage"
      missing=1
    fi
  done
  grep -qx protobuf-c-compiler "$dir/build.pkgs" || { echo "no protoc-c"; missing=1; }
  return $missing
}
check "the build stage installs every module CMakeLists.txt needs" \
  build_deps_installed
image_conf=$(awk '/^COPY deploy\/conf\// {print $2}' "$cf")
check "the image's config ($image_conf) passes sumcache -t" conf_ok "$image_conf"

# ---- Kubernetes
k8s=deploy/kubernetes/sumcache.yaml
check "$k8s passes yamllint" yamllint -s -d \
  "{extends: default, rules: {line-length: {max: 100}}}" "$k8s"
k8s_consistent() {
  /usr/bin/python3 - "$k8s" "$dir/k8s.conf" "$cf" <<'EOF'
import re, sys, yaml

docs = [d for d in yaml.safe_load_all(open(sys.argv[1])) if d]
kind = {}
for d in docs:
    kind.setdefault(d["kind"], []).append(d)
bad = []
def need(cond, what):
    if not cond:
        bad.append(what)

cm, = kind["ConfigMap"]
sts, = kind["StatefulSet"]
conf = cm["data"]["sumcache.conf"]
open(sys.argv[2], "w").write(conf)
ns = sts["metadata"]["namespace"]
svcs = {s["metadata"]["name"]: s for s in kind["Service"]}
headless = svcs.get(sts["spec"]["serviceName"])
need(headless is not None, "the StatefulSet's serviceName is no Service")
need(headless and headless["spec"].get("clusterIP") == "None",
     "the StatefulSet's Service is not headless")
pod = sts["spec"]["template"]
labels = pod["metadata"]["labels"]
match = sts["spec"]["selector"]["matchLabels"]
need(all(labels.get(k) == v for k, v in match.items()),
     "the StatefulSet's selector does not match its pods")
for name, s in svcs.items():
    need(all(labels.get(k) == v for k, v in s["spec"]["selector"].items()),
         "Service %s does not select the pods" % name)
c, = pod["spec"]["containers"]
port = {p["name"]: p["containerPort"] for p in c["ports"]}["http"]
m = re.search(r'peer_dns = "([^":]+):(\d+)"', conf)
need(m is not None, "no peer_dns in the config")
if m:
    need(m.group(1) == "%s.%s.svc.cluster.local" % (headless["metadata"]["name"], ns),
         "peer_dns does not resolve the headless Service")
    need(int(m.group(2)) == port, "peer_dns's port is not the container's")
need(re.search(r'http_listen = "0\.0\.0\.0:%d"' % port, conf) is not None,
     "http_listen is not the container port on every address")
args = c["args"]
cpath = args[args.index("-c") + 1]
mounts = {v["name"]: v["mountPath"] for v in c["volumeMounts"]}
vols = {v["name"]: v for v in pod["spec"]["volumes"]}
cm_vol = [n for n, v in vols.items() if v.get("configMap", {}).get("name") == cm["metadata"]["name"]]
need(len(cm_vol) == 1 and cpath == mounts[cm_vol[0]] + "/sumcache.conf",
     "-c does not name the mounted ConfigMap's file")
key = re.search(r'cluster_key_file = "([^"]+)"', conf)
key_vol = [n for n, v in vols.items() if "secret" in v]
need(key and len(key_vol) == 1 and key.group(1).startswith(mounts[key_vol[0]] + "/"),
     "cluster_key_file is not in the mounted Secret")
need("node_name=$(POD_NAME)" in args and
     any(e["name"] == "POD_NAME" for e in c.get("env", [])),
     "node_name is not the pod's name")
uid = re.search(r"useradd .*--uid (\d+)", open(sys.argv[3]).read().replace("\\\n", " "))
need(uid and pod["spec"]["securityContext"]["runAsUser"] == int(uid.group(1)),
     "the pods do not run as the image's user")
for b in bad:
    print(b)
sys.exit(1 if bad else 0)
EOF
}
check "the manifests hang together (peer_dns, selectors, mounts, user)" \
  k8s_consistent
check "the ConfigMap's config passes sumcache -t" conf_ok "$dir/k8s.conf"

checks_done deploy-check
