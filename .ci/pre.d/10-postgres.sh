# Sourced by .ci/run: start a throwaway PostgreSQL cluster for the
# compatibility tests (tests/compat/test_postgres.py, test_citus.py).
#
# The server listens on a unix socket in a private temporary directory only
# (no TCP), runs as an unprivileged user, and is stopped and deleted when
# .ci/run exits.  The tests find it through SHARDHASH_PG_DSN (a libpq
# connection string for psql) and the usual PGHOST/PGPORT/PGUSER variables.

_sh_pg_bindir=""
for _sh_d in /usr/lib/postgresql/*/bin; do
  if [ -x "$_sh_d/initdb" ] && [ -x "$_sh_d/pg_ctl" ]; then _sh_pg_bindir=$_sh_d; fi
done
if [ -z "$_sh_pg_bindir" ] && command -v initdb >/dev/null 2>&1 && command -v pg_ctl >/dev/null 2>&1; then
  _sh_pg_bindir=$(dirname "$(command -v initdb)")
fi

if [ -z "$_sh_pg_bindir" ]; then
  echo "PostgreSQL server binaries not found: the PostgreSQL oracle tests will fail"
else
  _sh_pg_dir=$(mktemp -d "${TMPDIR:-/tmp}/shardhash-pg.XXXXXX")
  chmod 755 "$_sh_pg_dir"
  _sh_pg_port=${SHARDHASH_PG_PORT:-54329}
  if [ "$(id -u)" = 0 ]; then
    # The server refuses to run as root: use the postgres account (or nobody).
    if id postgres >/dev/null 2>&1; then _sh_pg_user=postgres; else _sh_pg_user=nobody; fi
    chown "$_sh_pg_user" "$_sh_pg_dir"
    # (run from the server's own directory: the checkout may be unreadable to it)
    _sh_pg_as() { (cd "$_sh_pg_dir" && runuser -u "$_sh_pg_user" -- "$@"); }
  else
    _sh_pg_as() { "$@"; }
  fi
  _sh_pg_as "$_sh_pg_bindir/initdb" -D "$_sh_pg_dir/data" -A trust -U shardhash \
      -E UTF8 --locale=C --no-sync >"$_sh_pg_dir/initdb.log" 2>&1 \
    || { cat "$_sh_pg_dir/initdb.log"; false; }
  _sh_pg_as "$_sh_pg_bindir/pg_ctl" -D "$_sh_pg_dir/data" -l "$_sh_pg_dir/server.log" -w -t 60 \
      -o "-k $_sh_pg_dir -h '' -p $_sh_pg_port -F -c fsync=off" start >/dev/null \
    || { cat "$_sh_pg_dir/server.log"; false; }
  _sh_pg_stop="'$_sh_pg_bindir/pg_ctl' -D '$_sh_pg_dir/data' -m immediate -w stop >/dev/null 2>&1"
  if [ "$(id -u)" = 0 ]; then _sh_pg_stop="(cd / && runuser -u $_sh_pg_user -- $_sh_pg_stop)"; fi
  ci_on_exit "$_sh_pg_stop; rm -rf '$_sh_pg_dir'"
  export PGHOST="$_sh_pg_dir" PGPORT="$_sh_pg_port" PGUSER=shardhash PGDATABASE=postgres
  export SHARDHASH_PG_DSN="host=$_sh_pg_dir port=$_sh_pg_port user=shardhash dbname=postgres"
  echo "PostgreSQL $("$_sh_pg_bindir/postgres" --version | awk '{print $3}') on $SHARDHASH_PG_DSN"
fi
unset _sh_d _sh_pg_bindir _sh_pg_stop; unset -f _sh_pg_as 2>/dev/null || true
