# shellcheck shell=bash
# Sourced by .ci/run (and by developers: `source .ci/postgres.sh` in the shell that runs
# pytest). Starts a throwaway PostgreSQL listening on 127.0.0.1 only, on a free port, and
# exports the URL the store tests use. WINDOWKEEPER_REQUIRE_POSTGRES=1 turns a missing or
# unreachable server into test failures instead of skips. The server and its data
# directory are removed when the sourcing shell exits.

_wk_pg_bindir() {
    # initdb/pg_ctl on PATH first, then Debian's versioned directories (newest first).
    local candidate
    if command -v initdb >/dev/null 2>&1 && command -v pg_ctl >/dev/null 2>&1; then
        dirname "$(readlink -f "$(command -v initdb)")"
        return 0
    fi
    for candidate in $(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V -r); do
        if [ -x "$candidate/initdb" ] && [ -x "$candidate/pg_ctl" ]; then
            echo "$candidate"
            return 0
        fi
    done
    return 1
}

_wk_pg_install() {
    echo "postgres.sh: initdb/pg_ctl not found; installing PostgreSQL with apt-get" >&2
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -q >/dev/null
    apt-get install -y -q --no-install-recommends postgresql >/dev/null
}

_wk_pg_free_port() {
    python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1]); s.close()'
}

_wk_pg_as_postgres() {
    # initdb refuses to run as root; everything server-side runs as the postgres user.
    if [ "$(id -u)" = 0 ]; then
        runuser -u postgres -- "$@"
    else
        "$@"
    fi
}

_wk_pg_stop() {
    if [ -n "${_WK_PG_DATA:-}" ] && [ -d "$_WK_PG_DATA" ]; then
        _wk_pg_as_postgres "$_WK_PG_BIN/pg_ctl" -D "$_WK_PG_DATA" -m immediate -w stop \
            >/dev/null 2>&1 || true
        rm -rf "$_WK_PG_ROOT"
    fi
}

_wk_pg_start() {
    local port
    # Required from here on: if the server cannot start, the tests fail instead of skip.
    export WINDOWKEEPER_REQUIRE_POSTGRES=1
    _WK_PG_BIN="$(_wk_pg_bindir)" || { _wk_pg_install && _WK_PG_BIN="$(_wk_pg_bindir)"; } || {
        echo "postgres.sh: PostgreSQL is not available; its tests will skip or fail" >&2
        return 1
    }
    _WK_PG_ROOT="$(mktemp -d /tmp/wk-postgres.XXXXXX)"
    _WK_PG_DATA="$_WK_PG_ROOT/data"
    if [ "$(id -u)" = 0 ]; then chown postgres: "$_WK_PG_ROOT"; fi
    chmod 700 "$_WK_PG_ROOT"
    _wk_pg_as_postgres "$_WK_PG_BIN/initdb" -D "$_WK_PG_DATA" -U postgres \
        --auth=trust --encoding=UTF8 --locale=C.UTF-8 >"$_WK_PG_ROOT/initdb.log" 2>&1 || {
        cat "$_WK_PG_ROOT/initdb.log" >&2
        return 1
    }
    port="$(_wk_pg_free_port)"
    # listen_addresses=127.0.0.1 only; the socket lives in our temp dir, not /var/run.
    _wk_pg_as_postgres "$_WK_PG_BIN/pg_ctl" -D "$_WK_PG_DATA" -l "$_WK_PG_ROOT/server.log" -w \
        -o "-c listen_addresses=127.0.0.1 -p $port -k $_WK_PG_ROOT" start \
        >/dev/null || { cat "$_WK_PG_ROOT/server.log" >&2; return 1; }
    trap _wk_pg_stop EXIT
    _wk_pg_as_postgres "$_WK_PG_BIN/createdb" -h 127.0.0.1 -p "$port" -U postgres windowkeeper_test
    export WINDOWKEEPER_TEST_POSTGRES_URL="postgresql://postgres@127.0.0.1:$port/windowkeeper_test"
    echo "postgres.sh: PostgreSQL on 127.0.0.1:$port ($_WK_PG_BIN)" >&2
}

_wk_pg_start || true
