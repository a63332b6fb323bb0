# Sourced by .ci/run: start a throwaway MariaDB server for the MariaDB backend's
# tests (tests/_mariadb.py; the migrate, scatter and lookups suites and the crash
# injection run on it).
#
# The data directory and the unix socket live in a private temporary directory;
# no TCP (--skip-networking); as root the server runs as the mysql account (or
# nobody).  No binary log, no doublewrite, the redo log flushed once a second: a
# test server.  Stopped and deleted when .ci/run exits.  The tests find it
# through SHARDHASH_MYSQL_URL (root over the socket, no database).

_sh_my_d=""
for _sh_d in /usr/sbin /usr/bin /usr/local/bin; do
  if [ -x "$_sh_d/mariadbd" ]; then _sh_my_d=$_sh_d; break; fi
done
_sh_my_install=$(command -v mariadb-install-db 2>/dev/null || true)
if [ -z "$_sh_my_d" ] || [ -z "$_sh_my_install" ]; then
  echo "MariaDB server binaries not found: the MariaDB tests will fail"
else
  _sh_my_dir=$(mktemp -d "${TMPDIR:-/tmp}/shardhash-mariadb.XXXXXX")
  chmod 755 "$_sh_my_dir"
  _sh_my_user_opt=""
  if [ "$(id -u)" = 0 ]; then
    if id mysql >/dev/null 2>&1; then _sh_my_user=mysql; else _sh_my_user=nobody; fi
    chown "$_sh_my_user" "$_sh_my_dir"
    _sh_my_user_opt="--user=$_sh_my_user"
    _sh_my_as() { (cd "$_sh_my_dir" && runuser -u "$_sh_my_user" -- "$@"); }
  else
    _sh_my_as() { (cd "$_sh_my_dir" && "$@"); }
  fi
  _sh_my_sock="$_sh_my_dir/mysqld.sock"
  _sh_my_as "$_sh_my_install" --no-defaults --datadir="$_sh_my_dir/data" \
      --auth-root-authentication-method=normal --skip-test-db $_sh_my_user_opt \
      >"$_sh_my_dir/install.log" 2>&1 || { cat "$_sh_my_dir/install.log"; false; }
  _sh_my_as "$_sh_my_d/mariadbd" --no-defaults --datadir="$_sh_my_dir/data" --socket="$_sh_my_sock" \
      --skip-networking --pid-file="$_sh_my_dir/mysqld.pid" --innodb-flush-log-at-trx-commit=2 \
      --innodb-doublewrite=0 --innodb-buffer-pool-size=256M --skip-log-bin --max-connections=300 \
      --character-set-server=utf8mb4 --collation-server=utf8mb4_bin $_sh_my_user_opt \
      >"$_sh_my_dir/server.log" 2>&1 &
  for _sh_i in $(seq 1 300); do
    [ -S "$_sh_my_sock" ] && [ -s "$_sh_my_dir/mysqld.pid" ] && break
    sleep 0.1
  done
  if [ -S "$_sh_my_sock" ]; then
    ci_on_exit "kill \$(cat '$_sh_my_dir/mysqld.pid' 2>/dev/null) 2>/dev/null; for _i in \$(seq 1 100); do [ -e '$_sh_my_dir/mysqld.pid' ] || break; sleep 0.1; done; rm -rf '$_sh_my_dir'"
    export SHARDHASH_MYSQL_URL="mysql://root@localhost/?unix_socket=$("${PY:-python3}" -c 'import sys, urllib.parse; print(urllib.parse.quote(sys.argv[1], safe=""))' "$_sh_my_sock")"
    echo "MariaDB $("$_sh_my_d/mariadbd" --version | awk '{print $3}') on $_sh_my_sock"
  else
    cat "$_sh_my_dir/server.log" 2>/dev/null
    echo "mariadbd did not start: the MariaDB tests will fail"
  fi
fi
unset _sh_d _sh_i _sh_my_d _sh_my_install _sh_my_user_opt; unset -f _sh_my_as 2>/dev/null || true
