#!/usr/bin/env bash
# test_python.sh — the baton Python module against real servers: a packed dataset served by nginx
# (HTTP) and pushed to the RADOS Gateway (S3, SigV4-checked); tests/python/servers.py then holds the
# Loader to `baton train --sample-log` in every mode over both, counts nginx's bytes, and reads the
# checkpoints Checkpoints(uri=s3://…) copied to the gateway with boto3. Skips (77) without radosgw.
cd "$(dirname "$0")/../.." || exit 1
. tests/cli/lib.sh
. tests/servers/lib.sh
if ! srv_have_rgw || [ ! -d build/python/baton ]; then
    skip "radosgw or the built Python module is missing (scripts/deps.sh; make)"
    finish
    exit $?
fi
srv_init
trap 'srv_cleanup; [ "${BATON_KEEP_TMP:-0}" = 1 ] || rm -rf "$T"' EXIT
case "$BATON" in /*) ;; *) BATON=$PWD/$BATON ;; esac
"$BATON" pack --from fashion-mnist --split test --out "$T/www/fm" --shard-mb 1 --quiet >/dev/null || bad "pack"
srv_nginx "$T/www"
srv_rgw
"$BATON" push "$T/www/fm" s3://baton-py/fm --create-bucket --quiet >/dev/null 2>"$T/push.err" ||
    bad "push: $(cat "$T/push.err")"
export DATA=$T/www/fm NGINX_URL=http://127.0.0.1:$NGINX_PORT/fm/ NGINX_LOG=$SRV/nginx/access.log S3_URI=s3://baton-py/fm/
export BATON PYTHONPATH=$PWD/build/python
(cd tests/python && /usr/bin/python3 servers.py) >"$T/py.out" 2>&1
rc=$?
grep -v '^baton: ' "$T/py.out" | tail -n 30
sum=$(grep -E '^[0-9]+ passed, [0-9]+ failed' "$T/py.out" | tail -1)
read -r p _ f _ _ _ <<<"${sum:-0 passed, 1 failed}"
npass=$((npass + p)); nfail=$((nfail + f))
[ "$rc" = 0 ] || [ "$f" -gt 0 ] || bad "servers.py exited $rc"
finish
