# Shell helpers shared by deploy/ scripts (sourced, not run).

# wait_addr HOST PORT: until something accepts on HOST:PORT (10 s at most)
wait_addr() {
  for _ in $(seq 200); do
    (exec 3<>"/dev/tcp/$1/$2") 2>/dev/null && return 0
    sleep 0.05
  done
  echo "$(basename "$0"): nothing listens on $1:$2" >&2
  return 1
}

# wait_port PORT: the same on 127.0.0.1
wait_port() {
  wait_addr 127.0.0.1 "$1"
}

# ensure_built DIR: installs dependencies and builds (Release) into DIR
# unless sumcache and the workload tools are there already
ensure_built() {
  local dir=$1
  if [ -x "$dir/sumcache" ] && [ -x "$dir/demo-origin" ] &&
     [ -x "$dir/replay" ] && [ -x "$dir/workload-gen" ]; then
    return 0
  fi
  ./deploy/bootstrap.sh
  cmake -S . -B "$dir" -DCMAKE_BUILD_TYPE=Release >/dev/null
  cmake --build "$dir" -j"$(nproc)" >/dev/null
}

# stop_pid FILE: SIGTERM the process whose pid FILE holds, wait up to
# 10 s, then SIGKILL; removes FILE
stop_pid() {
  local f=$1 pid
  [ -f "$f" ] || return 0
  pid=$(cat "$f")
  if kill "$pid" 2>/dev/null; then
    for _ in $(seq 100); do
      kill -0 "$pid" 2>/dev/null || break
      sleep 0.1
    done
    kill -9 "$pid" 2>/dev/null || true
  fi
  rm -f "$f"
}
