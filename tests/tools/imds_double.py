#!/usr/bin/env python3
"""imds_double.py — an EC2 instance metadata service double written from AWS's documentation (the
EC2 user guide's spot instance-action, rebalance recommendation and IMDSv2 pages, and the
conventions of amazon-ec2-metadata-mock), independent of baton's own emulator (`baton imds`), for
testing baton's notice watcher against answers it did not write.

    imds_double.py [--v2-required | --v1-only] [--action A] [--after S] [--notice S] [--slide]
                   [--rebalance-after S] [--time-format iso|offset] [--forget-tokens-after S]
                   [--log FILE]

Prints "http://127.0.0.1:PORT" on stdout once it listens (port chosen by the kernel), then serves
until killed:
  PUT  /latest/api/token    header X-aws-ec2-metadata-token-ttl-seconds 1..21600 -> a token (400
                            outside that range, 400 without it; 403 with --v1-only: IMDSv2 off)
  GET  /latest/meta-data/spot/instance-action     404 until --after seconds have passed, then 200
                            {"action": A, "time": T}, T = the moment --after ended plus --notice
                            seconds (default 120), or with --slide now + --notice on every request
                            (the mock's default); --time-format offset writes T with +00:00
                            instead of Z (not what EC2 sends: a watcher must not believe it)
  GET  /latest/meta-data/spot/termination-time    the legacy item: T as plain text, or 404
  GET  /latest/meta-data/events/recommendations/rebalance   404, or {"noticeTime": "…Z"} after
                            --rebalance-after seconds
  GET  /latest/meta-data/instance-id, instance-type, placement/availability-zone
Every GET needs a valid, unexpired token with --v2-required (401 otherwise); a wrong token is 401
in any mode. --forget-tokens-after S drops every token issued so far once, S seconds in (what a
client sees when its token expired or the service restarted: 401 until it asks for a new one). Each request is logged to --log as one line: method, path, status, and the notice
time served (if any)."""
import argparse
import datetime
import json
import secrets
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

STATIC = {"instance-id": "i-0d0ub1e000000001", "instance-type": "c5.large",
          "placement/availability-zone": "us-east-1a"}


def iso(t, fmt):
    s = datetime.datetime.fromtimestamp(t, datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%S")
    return s + ("+00:00" if fmt == "offset" else "Z")


class Double:
    def __init__(self, a):
        self.a = a
        self.t0 = time.time()
        self.tokens = {}
        self.forgot = False
        self.lock = threading.Lock()
        self.log = open(a.log, "a", buffering=1) if a.log else None

    def notice_time(self):
        now = time.time()
        if self.a.action is None or now < self.t0 + self.a.after:
            return None
        return (now if self.a.slide else self.t0 + self.a.after) + self.a.notice


def handler(d):
    class H(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args):
            pass

        def reply(self, code, body=b"", ctype="text/plain", note=""):
            self.send_response(code)
            self.send_header("Content-Type", ctype)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            if self.command != "HEAD":
                self.wfile.write(body)
            if d.log:
                d.log.write("%s %s %d %s\n" % (self.command, self.path, code, note))

        def do_PUT(self):
            n = int(self.headers.get("Content-Length") or 0)
            if n:
                self.rfile.read(n)
            if self.path != "/latest/api/token":
                return self.reply(404)
            if d.a.v1_only:
                return self.reply(403)
            ttl = self.headers.get("X-aws-ec2-metadata-token-ttl-seconds")
            if ttl is None or not ttl.isdigit() or not 1 <= int(ttl) <= 21600:
                return self.reply(400)
            tok = secrets.token_urlsafe(32)
            with d.lock:
                d.tokens[tok] = time.time() + int(ttl)
            self.send_response(200)
            self.send_header("X-aws-ec2-metadata-token-ttl-seconds", ttl)
            self.send_header("Content-Type", "text/plain")
            self.send_header("Content-Length", str(len(tok)))
            self.end_headers()
            self.wfile.write(tok.encode())
            if d.log:
                d.log.write("PUT %s 200 ttl=%s\n" % (self.path, ttl))

        def do_GET(self):
            tok = self.headers.get("X-aws-ec2-metadata-token")
            with d.lock:
                fa = d.a.forget_tokens_after
                if fa is not None and not d.forgot and time.time() >= d.t0 + fa:
                    d.tokens.clear()
                    d.forgot = True
                valid = tok is not None and d.tokens.get(tok, 0) > time.time()
            if (tok is not None and not valid) or (d.a.v2_required and not valid):
                return self.reply(401)
            p = self.path
            if not p.startswith("/latest/meta-data/"):
                return self.reply(404)
            item = p[len("/latest/meta-data/"):]
            if item in STATIC:
                return self.reply(200, STATIC[item].encode())
            if item == "spot/instance-action":
                t = d.notice_time()
                if t is None:
                    return self.reply(404)
                body = json.dumps({"action": d.a.action, "time": iso(t, d.a.time_format)}).encode()
                return self.reply(200, body, "text/plain", iso(t, d.a.time_format))
            if item == "spot/termination-time":
                t = d.notice_time()
                return self.reply(404) if t is None else self.reply(200, iso(t, d.a.time_format).encode())
            if item == "events/recommendations/rebalance":
                ra = d.a.rebalance_after
                if ra is None or time.time() < d.t0 + ra:
                    return self.reply(404)
                return self.reply(200, json.dumps({"noticeTime": iso(d.t0 + ra, "iso")}).encode())
            return self.reply(404)

    return H


def main():
    ap = argparse.ArgumentParser()
    mode = ap.add_mutually_exclusive_group()
    mode.add_argument("--v2-required", action="store_true")
    mode.add_argument("--v1-only", action="store_true")
    ap.add_argument("--action", default=None)
    ap.add_argument("--after", type=float, default=0)
    ap.add_argument("--notice", type=float, default=120)
    ap.add_argument("--slide", action="store_true")
    ap.add_argument("--rebalance-after", type=float, default=None)
    ap.add_argument("--time-format", choices=["iso", "offset"], default="iso")
    ap.add_argument("--forget-tokens-after", type=float, default=None)
    ap.add_argument("--log")
    a = ap.parse_args()
    srv = ThreadingHTTPServer(("127.0.0.1", 0), handler(Double(a)))
    print("http://127.0.0.1:%d" % srv.server_address[1], flush=True)
    srv.serve_forever()


if __name__ == "__main__":
    sys.exit(main())
