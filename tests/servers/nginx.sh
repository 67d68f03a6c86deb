#!/usr/bin/env bash
# nginx.sh — a plain HTTP server on loopback for baton's tests and benchmarks:
# nginx serving the files under ROOT read-only (GET and HEAD only; Range
# requests work as nginx serves them by default: single and multi-range, 206).
#
# Owns: everything under DIR (nginx.conf, nginx.pid, access.log, error.log,
# nginx.out, temp folders, url, start_seconds). Reads ROOT, never writes it.
# Uses nothing from /etc/nginx but mime.types (if present).
#
# Usage:
#   nginx.sh start DIR PORT ROOT   # serve ROOT on http://127.0.0.1:PORT/
#   nginx.sh stop DIR              # stop it (by DIR/nginx.pid) and wait for it to exit
#
# On success `start` prints the base URL (http://127.0.0.1:PORT/) on stdout and
# writes it to DIR/url; progress, the start time and errors go to stderr.
# Directory listings are on (autoindex, JSON) so a client can list a prefix:
#   curl http://127.0.0.1:PORT/some/dir/   ->  [{"name":..,"type":"file","size":..}, ...]
# Environment: BATON_NGINX_TIMEOUT  seconds allowed for start (default 20).
set -euo pipefail

prog=nginx.sh
. "$(dirname "${BASH_SOURCE[0]}")/daemon.sh"
usage() { echo "usage: $prog start DIR PORT ROOT | $prog stop DIR" >&2; exit 2; }

find_nginx() {
    local n
    for n in "$(command -v nginx 2>/dev/null || true)" /usr/sbin/nginx /usr/local/sbin/nginx; do
        [ -n "$n" ] && [ -x "$n" ] && { echo "$n"; return 0; }
    done
    die "nginx not found (run scripts/deps.sh)"
}

do_stop() {
    local dir=$1 pid
    [ -f "$dir/nginx.pid" ] || return 0
    pid=$(cat "$dir/nginx.pid" 2>/dev/null || true)
    case "$pid" in ''|*[!0-9]*) rm -f "$dir/nginx.pid"; return 0 ;; esac
    if kill -0 "$pid" 2>/dev/null; then
        kill -TERM "$pid" 2>/dev/null || true      # fast shutdown: master and workers
        if ! wait_gone "$pid" 100; then
            log "nginx master $pid ignored TERM for 10 s; sending KILL"
            pkill -KILL -P "$pid" 2>/dev/null || true   # its workers (children of this pid only)
            kill -KILL "$pid" 2>/dev/null || true
            wait_gone "$pid" 100 || { log "nginx master $pid did not exit"; return 1; }
        fi
    fi
    rm -f "$dir/nginx.pid"
}

do_start() {
    local dir=$1 port=$2 root=$3 nginx t0 code secs mime=""
    case "$port" in ''|*[!0-9]*) usage ;; esac
    [ -d "$root" ] || die "ROOT $root is not a folder"
    command -v curl >/dev/null 2>&1 || die "curl not found"
    nginx=$(find_nginx)
    if ss -Hltn "sport = :$port" 2>/dev/null | grep -q .; then
        die "port $port is already in use"
    fi
    mkdir -p "$dir"
    dir=$(cd "$dir" && pwd)
    root=$(cd "$root" && pwd)
    if [ -f "$dir/nginx.pid" ] && kill -0 "$(cat "$dir/nginx.pid" 2>/dev/null || echo x)" 2>/dev/null; then
        die "nginx still running in $dir (run: $prog stop $dir)"
    fi
    rm -f "$dir/nginx.pid" "$dir/url" "$dir/start_seconds"
    mkdir -p "$dir/tmp"
    [ -f /etc/nginx/mime.types ] && mime="include /etc/nginx/mime.types;"
    local user_line=""
    [ "$(id -u)" -eq 0 ] && user_line="user root;"   # workers may read root-only files

    cat > "$dir/nginx.conf" <<EOF
# Written by tests/servers/nginx.sh: static, read-only files on loopback.
daemon on;
master_process on;
$user_line
worker_processes 2;
pid $dir/nginx.pid;
error_log $dir/error.log warn;
events { worker_connections 1024; }
http {
    $mime
    default_type application/octet-stream;
    access_log $dir/access.log;
    # what the client sent: the S3 request headers a test checks on the wire (temporary credentials)
    log_format s3hdrs '\$request_method \$request_uri host=[\$http_host] date=[\$http_x_amz_date] sha=[\$http_x_amz_content_sha256] range=[\$http_range] token=[\$http_x_amz_security_token] auth=[\$http_authorization]';
    access_log $dir/headers.log s3hdrs;
    client_body_temp_path $dir/tmp/body;
    proxy_temp_path $dir/tmp/proxy;
    fastcgi_temp_path $dir/tmp/fastcgi;
    uwsgi_temp_path $dir/tmp/uwsgi;
    scgi_temp_path $dir/tmp/scgi;
    sendfile on;
    tcp_nopush on;
    keepalive_timeout 65;
    keepalive_requests 10000;
    server_tokens off;
    server {
        listen 127.0.0.1:$port;
        server_name localhost;
        root $root;
        location / {
            limit_except GET { deny all; }   # GET (and so HEAD) only: read-only
            autoindex on;
            autoindex_format json;
        }
    }
}
EOF
    t0=$(now)
    # -e: error log before the config is read (else /var/log/nginx/error.log).
    "$nginx" -p "$dir" -e "$dir/error.log" -c "$dir/nginx.conf" -t >"$dir/check.log" 2>&1 \
        || { cat "$dir/check.log" >&2; die "nginx rejected $dir/nginx.conf"; }
    "$nginx" -p "$dir" -e "$dir/error.log" -c "$dir/nginx.conf" </dev/null >"$dir/nginx.out" 2>&1 \
        || { tail -n 20 "$dir/nginx.out" "$dir/error.log" >&2; die "nginx did not start"; }
    local deadline
    deadline=$(awk -v n="$t0" -v t="${BATON_NGINX_TIMEOUT:-20}" 'BEGIN { printf "%.3f", n + t }')
    while :; do
        code=$(curl -s -o /dev/null -m 2 -w '%{http_code}' "http://127.0.0.1:$port/" 2>/dev/null) || true
        case "$code" in [1-5][0-9][0-9]) break ;; esac
        if awk -v d="$deadline" -v n="$(now)" 'BEGIN { exit !(n > d) }'; then
            tail -n 20 "$dir/error.log" >&2
            do_stop "$dir" || true
            die "nginx did not answer on 127.0.0.1:$port within ${BATON_NGINX_TIMEOUT:-20}s"
        fi
        sleep 0.02
    done
    secs=$(awk -v a="$t0" -v b="$(now)" 'BEGIN { printf "%.3f", b - a }')
    log "nginx serves $root on http://127.0.0.1:$port/ (HTTP $code) after $secs s"
    echo "$secs" > "$dir/start_seconds"
    echo "http://127.0.0.1:$port/" > "$dir/url"
    echo "http://127.0.0.1:$port/"
}

[ $# -ge 2 ] || usage
case "$1" in
start) [ $# -eq 4 ] || usage; do_start "$2" "$3" "$4" ;;
stop)  [ $# -eq 2 ] || usage; [ -d "$2" ] || exit 0; do_stop "$2" ;;
*) usage ;;
esac
