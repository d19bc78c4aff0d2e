#!/usr/bin/env bash
# Starts, stops and describes the Redis and PostgreSQL servers the store tests and benchmarks use.
#
#   scripts/services.sh start   install redis-server/postgresql if missing, start both, wait, print URLs
#   scripts/services.sh stop    stop what `start` started (and nothing else)
#   scripts/services.sh env     print `export IDEMKIT_REDIS_URL=...` lines, for `eval "$(...)"`
#   scripts/services.sh status  say whether each server answers
#
# All servers keep their data under <repo>/.idemkit-run/ and listen on 127.0.0.1 only, on ports
# that do not clash with a system server: Redis on 6390, PostgreSQL on 5440, and a 3-primary Redis
# Cluster (no replicas) on 7001-7003 (IDEMKIT_REDIS_CLUSTER_PORTS; IDEMKIT_REDIS_CLUSTER=0 skips it).
#
# Root: only installing missing packages needs it (apt-get). As root, PostgreSQL runs as the
# `postgres` system user (it refuses to run as root); as any other user, the servers run as that
# user, so a user without root installs the packages (redis-server redis-tools postgresql
# postgresql-client) once, or runs their own servers and exports the variables `env` prints.
# When the `postgres` user cannot reach the clone (a clone under a mode-700 home such as /root),
# PostgreSQL's data, socket and log go to ~postgres/idemkit-run/<hash of the clone's run dir>/
# instead, one directory per clone; `stop` finds it there.
set -euo pipefail

REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
RUN="${IDEMKIT_RUN_DIR:-$REPO/.idemkit-run}"
REDIS_PORT="${IDEMKIT_REDIS_PORT:-6390}"
PG_PORT="${IDEMKIT_PG_PORT:-5440}"
PG_DB=idemkit_test
REDIS_URL="redis://127.0.0.1:$REDIS_PORT/0"
CLUSTER_ENABLED="${IDEMKIT_REDIS_CLUSTER:-1}"
read -r -a CLUSTER_PORTS <<<"${IDEMKIT_REDIS_CLUSTER_PORTS:-7001 7002 7003}"
CLUSTER_URL="redis+cluster://$(printf '127.0.0.1:%s,' "${CLUSTER_PORTS[@]}" | sed 's/,$//')/"
POSTGRES_URL="postgres://postgres@127.0.0.1:$PG_PORT/$PG_DB"

log() { echo "services: $*" >&2; }

# PostgreSQL refuses to run as root: as root, its tools run as the `postgres` system user (which
# owns the data directory); as any other user, as that user.
as_postgres() {
    if [[ $(id -u) -eq 0 ]]; then
        runuser -u postgres -- "$@"
    else
        "$@"
    fi
}

give_to_postgres() {
    if [[ $(id -u) -eq 0 ]]; then
        chown postgres: "$@"
    fi
}

# Where PostgreSQL keeps its data directory, socket and log: $RUN, unless this is root and the
# `postgres` user cannot write there; then a directory of postgres's own, keyed by $RUN so that
# two clones never share a server.
pg_home() {
    if [[ $(id -u) -ne 0 ]] || runuser -u postgres -- test -w "$RUN" -a -x "$RUN" 2>/dev/null; then
        echo "$RUN"
        return
    fi
    local home
    home="$(getent passwd postgres | cut -d: -f6)"
    echo "${home:-/var/lib/postgresql}/idemkit-run/$(printf '%s' "$RUN" | sha256sum | cut -c1-16)"
}

pg_bindir() {
    local dir
    for dir in $(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V -r); do
        if [[ -x "$dir/postgres" && -x "$dir/initdb" ]]; then
            echo "$dir"
            return 0
        fi
    done
    return 1
}

# Installs Debian's packages for whatever binary is missing; never starts the system's own servers.
install_missing() {
    local packages=()
    command -v redis-server >/dev/null 2>&1 || packages+=(redis-server)
    command -v redis-cli >/dev/null 2>&1 || packages+=(redis-tools)
    pg_bindir >/dev/null 2>&1 || packages+=(postgresql)
    command -v pg_isready >/dev/null 2>&1 || packages+=(postgresql-client)
    command -v pgbench >/dev/null 2>&1 || packages+=(postgresql-client)
    # The TLS tests make their certificates with it.
    command -v openssl >/dev/null 2>&1 || packages+=(openssl)
    if ((${#packages[@]} == 0)); then
        return 0
    fi
    if [[ $(id -u) -ne 0 ]]; then
        log "missing ${packages[*]}; install them (apt-get install ${packages[*]}) or run as root"
        exit 1
    fi
    log "installing ${packages[*]} with apt-get"
    # Keep the packages' maintainer scripts from starting system-wide servers on the default ports.
    local policy=/usr/sbin/policy-rc.d made_policy=0
    if [[ ! -e $policy ]]; then
        printf '#!/bin/sh\nexit 101\n' >"$policy"
        chmod 755 "$policy"
        made_policy=1
    fi
    local status=0
    {
        DEBIAN_FRONTEND=noninteractive apt-get update -qq &&
            DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${packages[@]}"
    } >&2 || status=$?
    if ((made_policy)); then
        rm -f "$policy"
    fi
    if ((status != 0)); then
        log "apt-get failed ($status)"
        exit "$status"
    fi
    # Debian's packages enable their system-wide servers at boot: disable what was just
    # installed (without starting or stopping anything), so only this script's servers run.
    local package unit
    for package in redis-server postgresql; do
        [[ " ${packages[*]} " == *" $package "* ]] || continue
        unit="$package.service"
        if command -v systemctl >/dev/null 2>&1; then
            systemctl disable "$unit" >/dev/null 2>&1 || true
        fi
        rm -f "/etc/systemd/system/multi-user.target.wants/$unit"
        if command -v update-rc.d >/dev/null 2>&1 && [[ -e /etc/init.d/$package ]]; then
            update-rc.d "$package" disable >/dev/null 2>&1 || true
        fi
        log "disabled the system-wide $unit at boot (it was not started)"
    done
}

redis_up() {
    redis-cli -h 127.0.0.1 -p "$REDIS_PORT" ping 2>/dev/null | grep -q PONG
}

cluster_node_up() {
    redis-cli -h 127.0.0.1 -p "$1" ping 2>/dev/null | grep -q PONG
}

cluster_ok() {
    local port
    for port in "${CLUSTER_PORTS[@]}"; do
        redis-cli -h 127.0.0.1 -p "$port" cluster info 2>/dev/null | grep -q '^cluster_state:ok' || return 1
    done
}

cluster_nodes_up() {
    local port
    for port in "${CLUSTER_PORTS[@]}"; do
        cluster_node_up "$port" || return 1
    done
}

pg_up() {
    pg_isready -q -h 127.0.0.1 -p "$PG_PORT" -d "$PG_DB" -U postgres 2>/dev/null
}

wait_for() {
    local what=$1 check=$2 i
    for ((i = 0; i < 150; i++)); do
        if "$check"; then
            return 0
        fi
        sleep 0.2
    done
    log "$what did not answer within 30 s"
    return 1
}

start_redis() {
    if redis_up; then
        log "redis already answers on 127.0.0.1:$REDIS_PORT"
        return 0
    fi
    mkdir -p "$RUN/redis"
    redis-server --port "$REDIS_PORT" --bind 127.0.0.1 \
        --daemonize yes --pidfile "$RUN/redis.pid" \
        --dir "$RUN/redis" --logfile "$RUN/redis.log" \
        --maxmemory-policy noeviction --save '' --appendonly no
    wait_for "redis on port $REDIS_PORT" redis_up
}

# A 3-primary Redis Cluster without replicas; each node's pid file marks it as started here.
start_cluster() {
    if cluster_ok; then
        log "redis cluster already ok on ports ${CLUSTER_PORTS[*]}"
        return 0
    fi
    local port dir started=()
    for port in "${CLUSTER_PORTS[@]}"; do
        if cluster_node_up "$port"; then
            continue
        fi
        dir="$RUN/redis-cluster/$port"
        mkdir -p "$dir"
        # A node that was stopped forgets its cluster: start every fresh node from a clean slate.
        rm -f "$dir/nodes.conf"
        redis-server --port "$port" --bind 127.0.0.1 \
            --daemonize yes --pidfile "$RUN/redis-cluster-$port.pid" \
            --dir "$dir" --logfile "$RUN/redis-cluster-$port.log" \
            --cluster-enabled yes --cluster-config-file nodes.conf --cluster-node-timeout 5000 \
            --maxmemory-policy noeviction --save '' --appendonly no
        started+=("$port")
    done
    wait_for "redis cluster nodes on ports ${CLUSTER_PORTS[*]}" cluster_nodes_up
    local known
    known="$(redis-cli -h 127.0.0.1 -p "${CLUSTER_PORTS[0]}" cluster info 2>/dev/null |
        sed -n 's/^cluster_known_nodes:\([0-9]*\).*/\1/p')"
    if [[ ${known:-0} -lt ${#CLUSTER_PORTS[@]} ]]; then
        local hosts=()
        for port in "${CLUSTER_PORTS[@]}"; do hosts+=("127.0.0.1:$port"); done
        log "creating redis cluster ${hosts[*]}"
        redis-cli --cluster create "${hosts[@]}" --cluster-replicas 0 --cluster-yes >"$RUN/redis-cluster-create.log" 2>&1 || {
            log "redis-cli --cluster create failed; see $RUN/redis-cluster-create.log"
            return 1
        }
    fi
    wait_for "redis cluster state ok" cluster_ok
}

start_postgres() {
    local bin home data sock
    bin="$(pg_bindir)"
    mkdir -p "$RUN"
    home="$(pg_home)"
    data="$home/postgres" sock="$home/pgsock"
    if ! pg_up; then
        if [[ $home != "$RUN" ]]; then
            log "the postgres user cannot reach $RUN: PostgreSQL keeps its data in $home"
            install -d -o postgres -g postgres -m 700 "$(dirname "$home")" "$home"
        fi
        mkdir -p "$sock"
        give_to_postgres "$sock"
        if [[ ! -s $data/PG_VERSION ]]; then
            mkdir -p "$data"
            give_to_postgres "$data"
            chmod 700 "$data"
            log "initdb $data"
            # initdb changes to the current directory's parent chain as postgres: run it from /.
            if ! (cd / && as_postgres "$bin/initdb" -D "$data" -U postgres --auth=trust \
                -E UTF8 --locale=C.UTF-8 >"$RUN/initdb.log" 2>&1) &&
                ! (cd / && as_postgres "$bin/initdb" -D "$data" -U postgres --auth=trust \
                    -E UTF8 --locale=C >"$RUN/initdb.log" 2>&1); then
                log "initdb failed ($RUN/initdb.log):"
                sed 's/^/    /' "$RUN/initdb.log" >&2
                exit 1
            fi
            cat >>"$data/postgresql.conf" <<EOF
# idemkit test server (scripts/services.sh)
listen_addresses = '127.0.0.1'
port = $PG_PORT
unix_socket_directories = '$sock'
max_connections = 200
shared_preload_libraries = 'pg_stat_statements'
pg_stat_statements.track = all
EOF
        fi
        touch "$home/postgres.log"
        give_to_postgres "$home/postgres.log"
        (cd / && as_postgres "$bin/pg_ctl" -D "$data" -l "$home/postgres.log" -w -t 60 start >&2) || {
            log "pg_ctl start failed; the server's log ($home/postgres.log) ends:"
            tail -n 20 "$home/postgres.log" | sed 's/^/    /' >&2
            exit 1
        }
        wait_for "postgresql on port $PG_PORT" pg_up_any
    else
        log "postgresql already answers on 127.0.0.1:$PG_PORT"
    fi
    if ! psql -h 127.0.0.1 -p "$PG_PORT" -U postgres -d postgres -Atqc \
        "SELECT 1 FROM pg_database WHERE datname = '$PG_DB'" | grep -q 1; then
        psql -h 127.0.0.1 -p "$PG_PORT" -U postgres -d postgres -qc "CREATE DATABASE $PG_DB" >&2
    fi
    psql -h 127.0.0.1 -p "$PG_PORT" -U postgres -d "$PG_DB" -qc \
        "CREATE EXTENSION IF NOT EXISTS pg_stat_statements" >&2 2>/dev/null ||
        log "pg_stat_statements is not available; the benchmark counts transactions instead"
    wait_for "database $PG_DB" pg_up
}

pg_up_any() {
    pg_isready -q -h 127.0.0.1 -p "$PG_PORT" -U postgres 2>/dev/null
}

stop_redis() {
    local pidfile="$RUN/redis.pid"
    if [[ -s $pidfile ]]; then
        local pid
        pid="$(cat "$pidfile")"
        if kill -0 "$pid" 2>/dev/null && grep -q redis "/proc/$pid/cmdline" 2>/dev/null; then
            log "stopping redis (pid $pid)"
            kill "$pid"
            for _ in $(seq 1 100); do
                kill -0 "$pid" 2>/dev/null || break
                sleep 0.1
            done
        fi
        rm -f "$pidfile"
    else
        log "no redis started by this script"
    fi
}

stop_cluster() {
    local port pidfile pid any=0
    for port in "${CLUSTER_PORTS[@]}"; do
        pidfile="$RUN/redis-cluster-$port.pid"
        [[ -s $pidfile ]] || continue
        any=1
        pid="$(cat "$pidfile")"
        if kill -0 "$pid" 2>/dev/null && grep -q redis "/proc/$pid/cmdline" 2>/dev/null; then
            log "stopping redis cluster node $port (pid $pid)"
            kill "$pid"
            for _ in $(seq 1 100); do
                kill -0 "$pid" 2>/dev/null || break
                sleep 0.1
            done
        fi
        rm -f "$pidfile"
    done
    ((any)) || log "no redis cluster started by this script"
}

stop_postgres() {
    local data bin
    data="$(pg_home)/postgres"
    if [[ -s $data/postmaster.pid ]]; then
        bin="$(pg_bindir)"
        log "stopping postgresql ($data)"
        (cd / && as_postgres "$bin/pg_ctl" -D "$data" -m fast -w stop >&2) || true
    else
        log "no postgresql started by this script"
    fi
}

print_env() {
    # Debian keeps initdb and pg_ctl off PATH; the tests that run a private PostgreSQL call them.
    local bin
    if ! command -v initdb >/dev/null 2>&1 && bin="$(pg_bindir)"; then
        echo "export PATH=$bin:\$PATH"
    fi
    echo "export IDEMKIT_REDIS_URL=$REDIS_URL"
    echo "export IDEMKIT_POSTGRES_URL=$POSTGRES_URL"
    if [[ $CLUSTER_ENABLED != 0 ]]; then
        echo "export IDEMKIT_REDIS_CLUSTER_URL=$CLUSTER_URL"
    fi
}

case "${1:-}" in
start)
    install_missing
    mkdir -p "$RUN"
    start_redis
    if [[ $CLUSTER_ENABLED != 0 ]]; then
        start_cluster
    fi
    start_postgres
    log "redis:      $REDIS_URL"
    if [[ $CLUSTER_ENABLED != 0 ]]; then
        log "cluster:    $CLUSTER_URL"
    fi
    log "postgresql: $POSTGRES_URL"
    print_env
    ;;
stop)
    stop_redis
    stop_cluster
    stop_postgres
    ;;
env)
    print_env
    ;;
status)
    rc=0
    if redis_up; then echo "redis: up ($REDIS_URL)"; else echo "redis: down"; rc=1; fi
    if [[ $CLUSTER_ENABLED != 0 ]]; then
        if cluster_ok; then echo "redis cluster: up ($CLUSTER_URL)"; else echo "redis cluster: down"; rc=1; fi
    fi
    if pg_up; then echo "postgresql: up ($POSTGRES_URL)"; else echo "postgresql: down"; rc=1; fi
    exit $rc
    ;;
*)
    echo "usage: $0 start|stop|env|status" >&2
    exit 2
    ;;
esac
