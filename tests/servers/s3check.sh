#!/usr/bin/env bash
# s3check.sh — smoke check of an S3 endpoint with curl's built-in AWS SigV4:
# proves that the endpoint really verifies signatures (a wrong secret and an
# unsigned request must be refused with 403), and that bucket create, object
# PUT, full GET and Range GET work byte-exactly.
#
# Owns: one scratch folder from mktemp (removed at exit) and one bucket on the
# endpoint (named s3check-<pid>-<time>, emptied and deleted at the end).
#
# Usage: s3check.sh            # reads AWS_ENDPOINT_URL, AWS_ACCESS_KEY_ID,
#                              # AWS_SECRET_ACCESS_KEY, AWS_REGION (default us-east-1)
#   e.g. . DIR/env.sh && tests/servers/s3check.sh   (DIR from rgw.sh start)
# Prints "s3check: ok" and exits 0 on success; exits 1 on the first failure.
# Every request is bounded (curl -m); the whole run takes well under a minute.
set -euo pipefail

prog=s3check
fail() { echo "$prog: FAIL: $*" >&2; exit 1; }

: "${AWS_ENDPOINT_URL:?set AWS_ENDPOINT_URL (e.g. . DIR/env.sh from rgw.sh)}"
: "${AWS_ACCESS_KEY_ID:?set AWS_ACCESS_KEY_ID}"
: "${AWS_SECRET_ACCESS_KEY:?set AWS_SECRET_ACCESS_KEY}"
REGION=${AWS_REGION:-us-east-1}
EP=${AWS_ENDPOINT_URL%/}
command -v curl >/dev/null 2>&1 || fail "curl not found"

tmp=$(mktemp -d "${TMPDIR:-/tmp}/s3check.XXXXXX")
bucket="s3check-$$-$(date +%s)"
cleanup() {
    # Best effort: delete the object and the bucket, then the scratch folder.
    s3 -o /dev/null -X DELETE "$EP/$bucket/obj.bin" >/dev/null 2>&1 || true
    s3 -o /dev/null -X DELETE "$EP/$bucket" >/dev/null 2>&1 || true
    rm -rf "$tmp"
}
trap cleanup EXIT

# Signed request with the given secret; prints the HTTP status on stdout.
# SigV4 needs x-amz-content-sha256, which curl 7.88 does not add by itself.
s3_as() {
    local secret=$1; shift
    curl -sS --connect-timeout 5 -m 30 \
        --aws-sigv4 "aws:amz:$REGION:s3" --user "$AWS_ACCESS_KEY_ID:$secret" \
        -H "x-amz-content-sha256: UNSIGNED-PAYLOAD" \
        -w '%{http_code}' "$@"
}
s3() { s3_as "$AWS_SECRET_ACCESS_KEY" "$@"; }

expect() {  # expect WHAT WANTED GOT
    [ "$2" = "$3" ] || fail "$1: expected HTTP $2, got ${3:-nothing} ($(head -c 300 "$tmp/body" 2>/dev/null | tr -d '\n'))"
}

# Test object: 300 KiB + 7 bytes of random data (not a multiple of anything).
head -c $((300 * 1024 + 7)) /dev/urandom > "$tmp/obj.bin"

code=$(s3 -o "$tmp/body" -X PUT "$EP/$bucket") || true
expect "create bucket $bucket" 200 "$code"

code=$(s3 -o "$tmp/body" -T "$tmp/obj.bin" "$EP/$bucket/obj.bin") || true
expect "PUT object" 200 "$code"

code=$(s3 -o "$tmp/full" "$EP/$bucket/obj.bin") || true
cp "$tmp/full" "$tmp/body" 2>/dev/null || true
expect "GET object" 200 "$code"
cmp -s "$tmp/obj.bin" "$tmp/full" || fail "GET object: body differs from what was PUT"

# Range GET: bytes 1000..(1000+65536+123-1) must match exactly.
off=1000 len=$((65536 + 123))
code=$(s3 -o "$tmp/part" -H "Range: bytes=$off-$((off + len - 1))" "$EP/$bucket/obj.bin") || true
cp "$tmp/part" "$tmp/body" 2>/dev/null || true
expect "Range GET" 206 "$code"
dd if="$tmp/obj.bin" of="$tmp/want" iflag=skip_bytes,count_bytes skip="$off" count="$len" status=none
cmp -s "$tmp/want" "$tmp/part" || fail "Range GET: body differs from bytes $off..$((off + len - 1))"

# A wrong secret must be refused: 403 (SignatureDoesNotMatch).
code=$(s3_as "${AWS_SECRET_ACCESS_KEY}x" -o "$tmp/body" "$EP/$bucket/obj.bin") || true
expect "GET with a wrong secret" 403 "$code"
grep -q SignatureDoesNotMatch "$tmp/body" || fail "GET with a wrong secret: no SignatureDoesNotMatch in the answer"

# An unsigned request for the private object must be refused too.
code=$(curl -sS --connect-timeout 5 -m 30 -o "$tmp/body" -w '%{http_code}' "$EP/$bucket/obj.bin") || true
expect "unsigned GET" 403 "$code"

code=$(s3 -o "$tmp/body" -X DELETE "$EP/$bucket/obj.bin") || true
expect "DELETE object" 204 "$code"
code=$(s3 -o "$tmp/body" -X DELETE "$EP/$bucket") || true
expect "DELETE bucket" 204 "$code"

echo "$prog: ok"
