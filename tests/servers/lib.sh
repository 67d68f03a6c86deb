# lib.sh — start and stop the loopback servers from test and bench scripts (sourced).
#   srv_init                 scratch folder $SRV, cleanup on exit (servers stopped, files removed)
#   srv_port VAR             a free loopback port into VAR
#   srv_nginx ROOT           nginx serving ROOT; sets NGINX_PORT
#   srv_rgw                  RADOS Gateway; exports AWS_* (endpoint, keys, region); sets RGW_PORT
#   srv_proxy VAR UPSTREAM [faultproxy options...]   fault proxy in front of UPSTREAM; port in VAR
#   srv_have_rgw             true when the Ceph packages are installed
#   srv_s3fs BUCKET FILE [CACHE]  mount BUCKET of srv_rgw's gateway read-only with s3fs (with CACHE,
#                            s3fs's local cache there: each object downloaded whole at its first
#                            open, as a lazily loaded FSx for Lustre does); sets S3FS_MNT once
#                            FILE (a key in it) is visible; 1 (a line said why) where it cannot
SRV_DIR_SELF=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
SRV_PIDS=()

srv_cleanup() {
    for p in "${SRV_PIDS[@]}"; do kill "$p" 2>/dev/null; done
    [ -d "$SRV/nginx" ] && "$SRV_DIR_SELF/nginx.sh" stop "$SRV/nginx" >/dev/null 2>&1
    [ -d "$SRV/rgw" ] && "$SRV_DIR_SELF/rgw.sh" stop "$SRV/rgw" >/dev/null 2>&1
    rm -rf "$SRV"
}

srv_init() {
    SRV=$(mktemp -d /tmp/baton-srv-XXXXXX)
    trap srv_cleanup EXIT
    cc -O2 -std=c11 -D_GNU_SOURCE -Wall -Wextra -Werror "$SRV_DIR_SELF/faultproxy.c" -o "$SRV/faultproxy" -lpthread
}

SRV_USED=" "
srv_port() {
    local p
    for _ in $(seq 1 200); do
        p=$(( 20000 + (RANDOM * 32768 + RANDOM) % 12000 ))
        case "$SRV_USED" in *" $p "*) continue ;; esac
        if ! ss -Hltn "sport = :$p" 2>/dev/null | grep -q .; then
            SRV_USED="$SRV_USED$p "
            printf -v "$1" '%s' "$p"
            return 0
        fi
    done
    echo "no free port" >&2
    return 1
}

srv_nginx() {
    srv_port NGINX_PORT
    "$SRV_DIR_SELF/nginx.sh" start "$SRV/nginx" "$NGINX_PORT" "$1" >/dev/null
}

srv_have_rgw() { command -v radosgw >/dev/null && command -v ceph-mon >/dev/null && command -v ceph-osd >/dev/null; }

srv_rgw() {
    local mon
    srv_port RGW_PORT
    srv_port mon
    eval "$("$SRV_DIR_SELF/rgw.sh" start "$SRV/rgw" "$RGW_PORT" "$mon")"
}

srv_proxy() {
    local var=$1 up=$2 port
    shift 2
    srv_port port
    "$SRV/faultproxy" --max-seconds 900 "$@" "$port" "$up" >"$SRV/proxy-$port.out" 2>&1 &
    SRV_PIDS+=($!)
    for _ in $(seq 1 100); do grep -q listening "$SRV/proxy-$port.out" && break; sleep 0.05; done
    printf -v "$var" '%s' "$port"
}

srv_s3fs() {
    S3FS_MNT=
    command -v s3fs >/dev/null && [ -e /dev/fuse ] || return 1
    printf '%s:%s\n' "$AWS_ACCESS_KEY_ID" "$AWS_SECRET_ACCESS_KEY" >"$SRV/s3fs.pass"
    chmod 600 "$SRV/s3fs.pass"
    mkdir -p "$SRV/s3mnt"
    local cache=()
    [ -n "${3:-}" ] && mkdir -p "$3" && cache=(-o use_cache="$3" -o parallel_count=8 -o multipart_size=16)
    if ! s3fs "$1" "$SRV/s3mnt" -o url="$AWS_ENDPOINT_URL" -o use_path_request_style -o ro \
        -o passwd_file="$SRV/s3fs.pass" -o endpoint="$AWS_REGION" "${cache[@]}" 2>"$SRV/s3fs.err"; then
        echo "s3fs mount failed: $(head -c 300 "$SRV/s3fs.err")"
        return 1
    fi
    S3FS_MNT=$SRV/s3mnt
    for _ in $(seq 100); do [ -f "$S3FS_MNT/$2" ] && break; sleep 0.1; done
}
