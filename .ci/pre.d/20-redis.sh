# Sourced by .ci/run: start a throwaway redis-server for the Redis Cluster
# compatibility tests (tests/compat/test_redis.py).
#
# Cluster mode (CLUSTER KEYSLOT needs it; no slots are assigned and no other
# node is met).  Clients reach it only through a unix socket in a private
# temporary directory (port 0: no client TCP listener); the cluster bus,
# which cluster mode always opens, listens on 127.0.0.1 on a free port.  No
# persistence.  Stopped and deleted when .ci/run exits.  The tests find it
# through SHARDHASH_REDIS_SOCKET.

if ! command -v redis-server >/dev/null 2>&1; then
  echo "redis-server not found: the Redis oracle tests will fail"
else
  _sh_redis_dir=$(mktemp -d "${TMPDIR:-/tmp}/shardhash-redis.XXXXXX")
  _sh_redis_bus=$("${PY:-python3}" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
  redis-server --port 0 --bind 127.0.0.1 --cluster-port "$_sh_redis_bus" --unixsocket "$_sh_redis_dir/redis.sock" --unixsocketperm 700 \
      --cluster-enabled yes --cluster-config-file "$_sh_redis_dir/nodes.conf" \
      --dir "$_sh_redis_dir" --save '' --appendonly no \
      --daemonize yes --pidfile "$_sh_redis_dir/redis.pid" --logfile "$_sh_redis_dir/redis.log"
  for _sh_i in $(seq 1 100); do
    [ -S "$_sh_redis_dir/redis.sock" ] && break
    sleep 0.1
  done
  if [ -S "$_sh_redis_dir/redis.sock" ]; then
    ci_on_exit "kill \$(cat '$_sh_redis_dir/redis.pid' 2>/dev/null) 2>/dev/null; sleep 0.2; rm -rf '$_sh_redis_dir'"
    export SHARDHASH_REDIS_SOCKET="$_sh_redis_dir/redis.sock"
    echo "$(redis-server --version | awk '{print $1, $2, $3}') on $SHARDHASH_REDIS_SOCKET"
  else
    cat "$_sh_redis_dir/redis.log" 2>/dev/null
    echo "redis-server did not start: the Redis oracle tests will fail"
    rm -rf "$_sh_redis_dir"
  fi
  unset _sh_i
fi
unset _sh_redis_dir _sh_redis_bus
