# Shell helpers shared by deploy/ scripts (sourced, not run).

# wait_port PORT: until something accepts on 127.0.0.1:PORT (10 s at most)
wait_port() {
  for _ in $(seq 200); do
    (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null && return 0
    sleep 0.05
  done
  echo "$(basename "$0"): nothing listens on 127.0.0.1:$1" >&2
  return 1
}
