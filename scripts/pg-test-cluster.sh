#!/usr/bin/env bash
# A throwaway PostgreSQL cluster for dlbench's tests and benchmarks (docs/storage.md, "The test
# cluster"). Nothing outside the cluster's own folders is touched, and nothing listens beyond
# 127.0.0.1.
#
# Usage:
#   scripts/pg-test-cluster.sh start STATE_DIR   initdb + start; writes STATE_DIR/cluster.env
#   scripts/pg-test-cluster.sh stop STATE_DIR    stop the server and remove its data
#   scripts/pg-test-cluster.sh pause STATE_DIR   stop the server, keep its data (fault tests)
#   scripts/pg-test-cluster.sh resume STATE_DIR  start it again on the same port
#
# STATE_DIR/cluster.env (shell syntax, also read by the tests) names:
#   DLBENCH_PG_URL     postgresql://dlbench@127.0.0.1:PORT/postgres (a superuser, trust auth)
#   DLBENCH_PG_PW_URL  the same server as role dlbench_pw, which needs the password in
#                      DLBENCH_PG_PASSWORD (scram-sha-256), for the wrong-password tests
#   DLBENCH_PG_PORT, DLBENCH_PG_DATA, DLBENCH_PG_BINDIR, DLBENCH_PG_OS_USER
#
# The server runs as a non-root user: initdb and postgres refuse root. When this script runs as
# root (CI), it runs them as $DLBENCH_PG_OS_USER (default: postgres, the user Debian's package
# creates) through setpriv. The data folder is a fresh mktemp folder under $TMPDIR (/tmp), which
# that user can reach whatever the permissions of the build tree.
#
# Without PostgreSQL's server binaries, `start` writes STATE_DIR/unavailable with the reason and
# exits 77 (CTest's "skipped"), unless DLBENCH_REQUIRE_POSTGRES=1 (scripts/test.sh sets it), when
# it fails. Settings for speed, not durability (fsync=off): a test cluster is thrown away; set
# DLBENCH_PG_FSYNC=on for a server that syncs like a production one (the store benchmark).
set -euo pipefail

command="${1:-}"
state_dir="${2:-}"
if [ -z "$command" ] || [ -z "$state_dir" ]; then
  echo "usage: $0 start|stop|pause|resume STATE_DIR" >&2
  exit 2
fi

find_bindir() {
  if [ -n "${DLBENCH_PG_BINDIR:-}" ] && [ -x "$DLBENCH_PG_BINDIR/initdb" ]; then
    echo "$DLBENCH_PG_BINDIR"
    return
  fi
  if command -v pg_config >/dev/null 2>&1; then
    local dir
    dir="$(pg_config --bindir 2>/dev/null || true)"
    if [ -n "$dir" ] && [ -x "$dir/initdb" ]; then
      echo "$dir"
      return
    fi
  fi
  # Debian keeps the server binaries off PATH, one folder per major version; take the newest.
  local best=""
  for dir in /usr/lib/postgresql/*/bin; do
    if [ -x "$dir/initdb" ]; then best="$dir"; fi
  done
  if [ -n "$best" ]; then
    echo "$best"
    return
  fi
  if command -v initdb >/dev/null 2>&1; then dirname "$(command -v initdb)"; fi
}

unavailable() {
  mkdir -p "$state_dir"
  echo "$1" >"$state_dir/unavailable"
  if [ "${DLBENCH_REQUIRE_POSTGRES:-0}" = "1" ]; then
    echo "pg-test-cluster: $1 (DLBENCH_REQUIRE_POSTGRES=1, so this is a failure)" >&2
    exit 1
  fi
  echo "pg-test-cluster: skipped: $1" >&2
  exit 77
}

# Runs a command as the cluster's OS user (itself when not root).
as_user() {
  if [ "$(id -u)" -eq 0 ]; then
    setpriv --reuid="$os_user" --regid="$(id -g "$os_user")" --init-groups -- "$@"
  else
    "$@"
  fi
}

free_port() {
  python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

load_env() {
  if [ ! -f "$state_dir/cluster.env" ]; then
    echo "pg-test-cluster: no cluster in $state_dir" >&2
    exit 1
  fi
  # shellcheck disable=SC1091
  . "$state_dir/cluster.env"
  os_user="$DLBENCH_PG_OS_USER"
}

server_start() {
  as_user "$DLBENCH_PG_BINDIR/pg_ctl" -D "$DLBENCH_PG_DATA" -l "$DLBENCH_PG_DATA/../server.log" -w -t 60 \
    start >/dev/null
}

case "$command" in
  start)
    rm -f "$state_dir/unavailable"
    bindir="$(find_bindir)"
    if [ -z "$bindir" ]; then
      unavailable "no PostgreSQL server binaries (initdb) found; install Debian's postgresql (scripts/setup-debian.sh)"
    fi
    os_user="$(id -un)"
    if [ "$(id -u)" -eq 0 ]; then
      os_user="${DLBENCH_PG_OS_USER:-postgres}"
      if ! id "$os_user" >/dev/null 2>&1; then
        unavailable "running as root and there is no user '$os_user' to run the server as (set DLBENCH_PG_OS_USER)"
      fi
    fi
    if [ -f "$state_dir/cluster.env" ]; then "$0" stop "$state_dir" || true; fi
    mkdir -p "$state_dir"
    base="$(mktemp -d "${TMPDIR:-/tmp}/dlbench-pg-XXXXXX")"
    chmod 700 "$base"
    if [ "$(id -u)" -eq 0 ]; then chown "$os_user:" "$base"; fi
    data="$base/data"
    port="$(free_port)"
    as_user "$bindir/initdb" -D "$data" -U dlbench --auth=trust -E UTF8 --locale=C.UTF-8 --no-sync \
      >"$base/initdb.log" 2>&1 || {
      cat "$base/initdb.log" >&2
      exit 1
    }
    fsync="${DLBENCH_PG_FSYNC:-off}"
    as_user tee -a "$data/postgresql.conf" >/dev/null <<EOF
listen_addresses = '127.0.0.1'
port = $port
unix_socket_directories = '$base'
max_connections = 100
fsync = $fsync
synchronous_commit = $fsync
full_page_writes = $fsync
EOF
    # The password role must prove its password over TCP; everyone else is trusted (loopback only).
    as_user tee "$data/pg_hba.conf" >/dev/null <<EOF
local all all trust
host all dlbench_pw 127.0.0.1/32 scram-sha-256
host all all 127.0.0.1/32 trust
EOF
    cat >"$state_dir/cluster.env" <<EOF
DLBENCH_PG_URL=postgresql://dlbench@127.0.0.1:$port/postgres
DLBENCH_PG_PW_URL=postgresql://dlbench_pw@127.0.0.1:$port/postgres
DLBENCH_PG_PASSWORD=pw-for-dlbench-tests
DLBENCH_PG_PORT=$port
DLBENCH_PG_BASE=$base
DLBENCH_PG_DATA=$data
DLBENCH_PG_BINDIR=$bindir
DLBENCH_PG_OS_USER=$os_user
EOF
    load_env
    server_start
    "$bindir/psql" -X -q -h 127.0.0.1 -p "$port" -U dlbench -d postgres -v ON_ERROR_STOP=1 \
      -c "CREATE ROLE dlbench_pw LOGIN CREATEDB PASSWORD 'pw-for-dlbench-tests'" >/dev/null
    echo "pg-test-cluster: PostgreSQL $("$bindir/postgres" --version | awk '{print $NF}') on 127.0.0.1:$port (data $data)"
    ;;
  stop)
    if [ ! -f "$state_dir/cluster.env" ]; then exit 0; fi
    load_env
    as_user "$DLBENCH_PG_BINDIR/pg_ctl" -D "$DLBENCH_PG_DATA" -m immediate -w stop >/dev/null 2>&1 || true
    rm -rf "$DLBENCH_PG_BASE"
    rm -f "$state_dir/cluster.env"
    ;;
  pause)
    load_env
    as_user "$DLBENCH_PG_BINDIR/pg_ctl" -D "$DLBENCH_PG_DATA" -m fast -w stop >/dev/null
    ;;
  resume)
    load_env
    server_start
    ;;
  *)
    echo "usage: $0 start|stop|pause|resume STATE_DIR" >&2
    exit 2
    ;;
esac
