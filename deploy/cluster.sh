#!/usr/bin/env bash
# A local sumcache cluster in one command.
#
#   deploy/cluster.sh up N [--mode summary|icp|none|carp|summary+hash]
#                          [--netns] [--delay MS]
#                          [--cache-mem SIZE] [--cache-dir SIZE]
#                          [--origin-latency MS]
#   deploy/cluster.sh status
#   deploy/cluster.sh stop NAME | start NAME
#   deploy/cluster.sh down
#
# up starts the demo origin (deploy/workload/demo_origin.c) and N sumcache
# nodes peered with each other, sharing by Summary Cache (the default), ICP,
# or not at all; carp and summary+hash add placement hash (a miss goes to
# the key's owner) to sharing none and summary.
#   - On loopback (the default) node i listens on 127.0.0.1:3128+i-1 (ICP on
#     UDP 4128+i-1); the origin on 127.0.0.1:8081.
#   - With --netns each node is a host of its own: network namespace
#     sumcache-nI, address 10.77.0.I (HTTP 3128, ICP 3130), joined to the
#     others by veth pairs on the bridge sumcache-br, where this host is
#     10.77.0.254 and the origin listens. --delay MS adds MS of one-way delay
#     (netem) to what nodes send each other, a WAN between sites; traffic to
#     the origin and to clients is not delayed.
# --cache-dir SIZE gives each node a disk tier of SIZE in run/cache/NAME
# (SUMCACHE_CACHE_ROOT), kept across down and up: a node started again
# serves what it had. Each node's config, log, access log and pid are in
# run/cluster/
# (SUMCACHE_CLUSTER_DIR); SUMCACHE_NODE_CONF is more config lines for every
# node (e.g. 'connect_ports = [443, 8443];'). status scrapes every node's
# /metrics; stop NAME stops one node (its peers see it die) and start NAME
# starts it again from its config, as a node leaving and joining; down
# stops everything by pid and removes the namespaces.
# SUMCACHE_BASE_PORT and SUMCACHE_ORIGIN_PORT move the loopback ports
# (3128, 8081).
set -euo pipefail
cd "$(dirname "$0")/.."
. deploy/lib.sh

state=${SUMCACHE_CLUSTER_DIR:-run/cluster}
cache_root=${SUMCACHE_CACHE_ROOT:-run/cache}
case $state in /*) ;; *) state=$(pwd)/$state ;; esac  # configs name files by it
build=${SUMCACHE_BUILD:-build}
origin_port=${SUMCACHE_ORIGIN_PORT:-8081}
base_port=${SUMCACHE_BASE_PORT:-3128}  # loopback: node i on base + i - 1
bridge=sumcache-br
subnet=10.77.0

die() {
  echo "cluster: $*" >&2
  exit 1
}

usage() {
  sed -n '2,11p' "$0" | sed 's/^# \{0,1\}//' >&2
  exit 2
}

# "name host port icp pid netns" per node, one line each
nodes_file=$state/nodes

running() {
  [ -f "$nodes_file" ] || return 1
  while read -r _ _ _ _ pid _; do
    kill -0 "$pid" 2>/dev/null && return 0
  done <"$nodes_file"
  return 1
}

netns_up() {
  local n=$1 delay=$2
  ip link add "$bridge" type bridge
  ip addr add "$subnet.254/24" dev "$bridge"
  ip link set "$bridge" up
  for i in $(seq "$n"); do
    local ns=sumcache-n$i
    ip netns add "$ns"
    ip link add "sc-n$i" type veth peer name eth0 netns "$ns"
    ip link set "sc-n$i" master "$bridge" up
    ip -n "$ns" addr add "$subnet.$i/24" dev eth0
    ip -n "$ns" link set eth0 up
    ip -n "$ns" link set lo up
    ip -n "$ns" route add default via "$subnet.254"
    if [ "$delay" -gt 0 ]; then
      # band 3 (delayed) only for other nodes; the origin and clients
      # (this host, .254) go through band 1
      { ip netns exec "$ns" tc qdisc add dev eth0 root handle 1: prio &&
        ip netns exec "$ns" tc qdisc add dev eth0 parent 1:3 handle 30: \
          netem delay "${delay}ms"; } 2>/dev/null ||
        die "--delay needs the kernel's prio and netem qdiscs (sch_prio, sch_netem); this kernel lacks them"
      ip netns exec "$ns" tc filter add dev eth0 parent 1: protocol ip \
        prio 1 u32 match ip dst "$subnet.254/32" flowid 1:1
      ip netns exec "$ns" tc filter add dev eth0 parent 1: protocol ip \
        prio 2 u32 match ip dst "$subnet.0/24" flowid 1:3
    fi
  done
}

netns_down() {
  for ns in $(ip netns list 2>/dev/null | awk '/^sumcache-n[0-9]+/ {print $1}'); do
    ip netns del "$ns" 2>/dev/null || true
  done
  ip link del "$bridge" 2>/dev/null || true
}

# node_conf NAME HOST PORT ICP MODE N INDEX NETNS: the node's config file
node_conf() {
  local name=$1 host=$2 port=$3 icp=$4 mode=$5 n=$6 me=$7 netns=$8
  local f=$state/$name.conf sharing
  case $mode in carp) sharing=none ;; summary+hash) sharing=summary ;;
    *) sharing=$mode ;; esac
  {
    echo "# node $name of a $n-node $mode cluster (deploy/cluster.sh)"
    echo "node_name = \"$name\";"
    echo "http_listen = \"$host:$port\";"
    echo "cache_mem = \"$cache_mem\";"
    if [ -n "$cache_dir" ]; then
      mkdir -p "$cache_root"
      echo "cache_dir = \"$(cd "$cache_root" && pwd)/$name $cache_dir\";"
    fi
    echo "access_log = \"$state/$name.access.log\";"
    if [ "$netns" = 1 ]; then
      echo "allow = [\"127.0.0.0/8\", \"$subnet.0/24\"];"
    fi
    echo "sharing = \"$sharing\";"
    [ "$sharing" = "$mode" ] || echo "placement = \"hash\";"
    if [ "$mode" = icp ]; then
      echo "icp_listen = \"$host:$icp\";"
    else
      echo "icp_listen = \"none\";"
    fi
    if [ "$sharing" = summary ]; then
      echo "cluster_key_file = \"$state/cluster.key\";"
    fi
    if [ "$mode" != none ]; then
      local sep="" peers=""
      for j in $(seq "$n"); do
        [ "$j" = "$me" ] && continue
        local ph pp pi
        if [ "$netns" = 1 ]; then
          ph=$subnet.$j pp=3128 pi=3130
        else
          ph=127.0.0.1 pp=$((base_port + j - 1)) pi=$((base_port + 999 + j))
        fi
        peers="$peers$sep\"n$j $ph:$pp icp=$pi\""
        sep=", "
      done
      echo "peer = [$peers];"
    fi
    if [ -n "${SUMCACHE_NODE_CONF:-}" ]; then
      printf '%s\n' "$SUMCACHE_NODE_CONF"
    fi
  } >"$f"
  "$build/sumcache" -t -c "$f" >/dev/null || die "$f: rejected by sumcache -t"
}

# start_node NAME NETNS: runs the node from its config in the background
# ($! is its pid); its log is appended to
start_node() {
  local name=$1 netns=$2
  if [ "$netns" = 1 ]; then
    ip netns exec "sumcache-$name" "$build/sumcache" -c "$state/$name.conf" \
      >>"$state/$name.log" 2>&1 &
  else
    "$build/sumcache" -c "$state/$name.conf" >>"$state/$name.log" 2>&1 &
  fi
}

# node_line NAME: the node's line of the nodes file, or die
node_line() {
  local line
  line=$(awk -v n="$1" '$1 == n' "$nodes_file" 2>/dev/null)
  [ -n "$line" ] || die "no node '$1' in $nodes_file"
  echo "$line"
}

# stop_node NAME: SIGTERM, as a node taken out of service
stop_node() {
  local name pid
  read -r name _ _ _ pid _ <<<"$(node_line "$1")"
  echo "$pid" >"$state/$name.pid"
  stop_pid "$state/$name.pid"
  echo "cluster: $name stopped"
}

# start_again NAME: a stopped node back, with what its config says
start_again() {
  local name host port icp pid netns
  read -r name host port icp pid netns <<<"$(node_line "$1")"
  ! kill -0 "$pid" 2>/dev/null || die "$name is running (pid $pid)"
  start_node "$name" "$netns"
  pid=$!
  awk -v n="$name" -v l="$name $host $port $icp $pid $netns" \
    '$1 == n { print l; next } { print }' "$nodes_file" >"$nodes_file.new"
  mv "$nodes_file.new" "$nodes_file"
  wait_addr "$host" "$port" || die "node $name did not start; see $state/$name.log"
  echo "cluster: $name started (pid $pid)"
}

up() {
  local n="" mode=summary netns=0 delay=0 latency=0
  cache_mem=64MB
  cache_dir=""
  while [ $# -gt 0 ]; do
    case $1 in
      --mode) mode=${2:?}; shift ;;
      --cache-dir) cache_dir=${2:?}; shift ;;
      --netns) netns=1 ;;
      --delay) delay=${2:?}; shift ;;
      --cache-mem) cache_mem=${2:?}; shift ;;
      --origin-latency) latency=${2:?}; shift ;;
      -*) usage ;;
      *) [ -z "$n" ] || usage; n=$1 ;;
    esac
    shift
  done
  [[ "$n" =~ ^[0-9]+$ ]] && [ "$n" -ge 1 ] && [ "$n" -le 64 ] ||
    die "up needs a node count, 1 to 64"
  case $mode in summary|icp|none|carp|summary+hash) ;;
    *) die "--mode: summary, icp, none, carp or summary+hash" ;; esac
  [[ "$delay" =~ ^[0-9]+$ ]] || die "--delay: milliseconds"
  [ "$delay" -eq 0 ] || [ "$netns" = 1 ] || die "--delay needs --netns"
  if running; then
    die "a cluster is running ($state); deploy/cluster.sh down first"
  fi
  ensure_built "$build"
  rm -rf "$state"
  mkdir -p "$state"
  head -c 32 /dev/urandom | base64 >"$state/cluster.key"
  chmod 600 "$state/cluster.key"
  echo "$mode" >"$state/mode"

  local ohost=127.0.0.1
  if [ "$netns" = 1 ]; then
    [ "$(id -u)" -eq 0 ] || die "--netns needs root"
    netns_down
    trap netns_down EXIT  # a step that fails leaves nothing behind
    netns_up "$n" "$delay"
    trap - EXIT
    ohost=$subnet.254
  fi
  "$build/demo-origin" -l "$ohost:$origin_port" -d "$latency" \
    >"$state/origin.log" 2>&1 &
  echo $! >"$state/origin.pid"
  echo "$ohost:$origin_port" >"$state/origin"
  wait_addr "$ohost" "$origin_port"

  : >"$nodes_file"
  for i in $(seq "$n"); do
    local name=n$i host port icp
    if [ "$netns" = 1 ]; then
      host=$subnet.$i port=3128 icp=3130
    else
      host=127.0.0.1 port=$((base_port + i - 1)) icp=$((base_port + 999 + i))
    fi
    node_conf "$name" "$host" "$port" "$icp" "$mode" "$n" "$i" "$netns"
    start_node "$name" "$netns"
    echo "$name $host $port $icp $! $netns" >>"$nodes_file"
  done
  while read -r name host port _ _ _; do
    wait_addr "$host" "$port" || die "node $name did not start; see $state/$name.log"
  done <"$nodes_file"

  echo "cluster: $n node(s), sharing $mode, origin http://$ohost:$origin_port/"
  while read -r name host port icp _ _; do
    if [ "$mode" = icp ]; then
      echo "  $name  http://$host:$port  (ICP $host:$icp)"
    else
      echo "  $name  http://$host:$port"
    fi
  done <"$nodes_file"
  echo "  state, configs and logs: $state/"
}

# metric FILE SERIES: a value from a /metrics scrape (summed over label
# sets when SERIES is a family prefix ending in '{')
metric() {
  awk -v s="$2" 'index($0, s) == 1 { v += $NF } END { printf "%.0f", v }' "$1"
}

status() {
  [ -f "$nodes_file" ] || die "no cluster ($state); deploy/cluster.sh up N"
  local tmp
  tmp=$(mktemp)
  printf '%-5s %-22s %-5s %9s %7s %7s %7s %10s %12s %6s\n' node address state \
    requests local remote total "ip msgs" "ip bytes" "peers"
  while read -r name host port _ pid _; do
    if ! kill -0 "$pid" 2>/dev/null ||
       ! curl -s --noproxy '*' -m 2 "http://$host:$port/metrics" >"$tmp"; then
      printf '%-5s %-22s %-5s\n' "$name" "$host:$port" down
      continue
    fi
    local lh rh miss err req up peers
    lh=$(metric "$tmp" 'sumcache_requests_total{result="local_hit"}')
    rh=$(metric "$tmp" 'sumcache_requests_total{result="remote_hit"}')
    miss=$(metric "$tmp" 'sumcache_requests_total{result="miss"}')
    err=$(metric "$tmp" 'sumcache_requests_total{result="error"}')
    req=$((lh + rh + miss + err))
    up=$(metric "$tmp" 'sumcache_peer_up{')
    peers=$(grep -c '^sumcache_peer_up{' "$tmp" || true)
    awk -v n="$name" -v a="$host:$port" -v req="$req" -v lh="$lh" -v rh="$rh" \
        -v msgs="$(metric "$tmp" 'sumcache_interproxy_messages_total{direction="sent"')" \
        -v bytes="$(metric "$tmp" 'sumcache_interproxy_bytes_total{direction="sent"')" \
        -v peers="$up/$peers" 'BEGIN {
      d = req > 0 ? req : 1
      printf "%-5s %-22s %-5s %9d %6.1f%% %6.1f%% %6.1f%% %10.0f %12.0f %6s\n",
        n, a, "up", req, 100 * lh / d, 100 * rh / d, 100 * (lh + rh) / d,
        msgs, bytes, peers }'
  done <"$nodes_file"
  rm -f "$tmp"
  echo "(ip = inter-proxy traffic this node sent; peers = up/known; mode $(cat "$state/mode"))"
}

down() {
  if [ -f "$nodes_file" ]; then
    while read -r name _ _ _ pid _; do
      echo "$pid" >"$state/$name.pid"
      stop_pid "$state/$name.pid"
    done <"$nodes_file"
    rm -f "$nodes_file"
  fi
  stop_pid "$state/origin.pid"
  if [ "$(id -u)" -eq 0 ]; then
    netns_down
  fi
  echo "cluster: down"
}

case ${1:-} in
  up) shift; up "$@" ;;
  status) status ;;
  stop) [ $# -eq 2 ] || usage; stop_node "$2" ;;
  start) [ $# -eq 2 ] || usage; start_again "$2" ;;
  down) down ;;
  *) usage ;;
esac
