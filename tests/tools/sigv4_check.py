#!/usr/bin/env python3
"""sigv4_check.py — checks S3 requests as a server received them (nginx's headers log, the
s3hdrs format of tests/servers/nginx.sh) against botocore's own SigV4 signer: every signed request
carries the session token in x-amz-security-token, names it among its signed headers, and its
signature is the one botocore computes for the same method, URI, headers, time and credentials.

    sigv4_check.py HEADERS_LOG ACCESS_KEY SECRET TOKEN      exit 0, and "N requests signed", when all are

Requests without an Authorization header (none expected from baton's S3 client) are errors too."""
import datetime
import re
import sys
import types

import botocore.auth
from botocore.awsrequest import AWSRequest
from botocore.credentials import Credentials

LINE = re.compile(r"^(\S+) (\S+) host=\[(.*?)\] date=\[(.*?)\] sha=\[(.*?)\] range=\[(.*?)\] token=\[(.*?)\] "
                  r"auth=\[(.*)\]$")
AUTH = re.compile(r"^AWS4-HMAC-SHA256 Credential=([^/]+)/(\d{8})/([^/]+)/s3/aws4_request, "
                  r"SignedHeaders=([a-z0-9;-]+), Signature=([0-9a-f]{64})$")


class _Clock(datetime.datetime):
    """The request's own time for the signer: botocore 1.29 (Debian 12's) reads datetime.datetime.
    utcnow() in add_auth, later ones get_current_datetime(); a signature computed at the clock's
    time differed from every request once the second had turned since it was sent."""
    at = None

    @classmethod
    def utcnow(cls):
        return cls.at


botocore.auth.datetime = types.SimpleNamespace(**{k: getattr(datetime, k) for k in dir(datetime) if not k.startswith("__")})
botocore.auth.datetime.datetime = _Clock


def main():
    log, key, secret, token = sys.argv[1:5]
    bad, n = [], 0
    for raw in open(log):
        m = LINE.match(raw.rstrip("\n"))
        if not m:
            bad.append("unparsed line: " + raw.strip())
            continue
        method, uri, host, date, sha, rng, tok, auth = m.groups()
        if method == "GET" and uri == "/" and auth == "-":   # the test's own readiness probe
            continue
        a = AUTH.match(auth)
        if not a:
            bad.append("%s %s: no SigV4 Authorization (%s)" % (method, uri, auth))
            continue
        cred_key, day, region, signed, sig = a.groups()
        if tok != token:
            bad.append("%s %s: x-amz-security-token %r, want the session token" % (method, uri, tok))
        if "x-amz-security-token" not in signed.split(";"):
            bad.append("%s %s: the token is not among the signed headers (%s)" % (method, uri, signed))
        when = datetime.datetime.strptime(date, "%Y%m%dT%H%M%SZ")
        _Clock.at = when
        botocore.auth.get_current_datetime = lambda: when
        headers = {"Host": host}
        if rng != "-":
            headers["Range"] = rng
        req = AWSRequest(method=method, url="http://" + host + uri, headers=headers)
        signer = botocore.auth.S3SigV4Auth(Credentials(key, secret, token), "s3", region)
        signer.payload = lambda request: sha   # what the client declared (UNSIGNED-PAYLOAD for a GET)
        signer.add_auth(req)
        want = AUTH.match(req.headers["Authorization"])
        if cred_key != key or not want or want.group(5) != sig or want.group(4) != signed:
            bad.append("%s %s: signature %s over %s; botocore signs %s" % (method, uri, sig, signed,
                                                                          req.headers["Authorization"]))
        n += 1
    for b in bad:
        print(b, file=sys.stderr)
    print("%d requests signed" % n)
    return 1 if bad or n == 0 else 0


if __name__ == "__main__":
    sys.exit(main())
