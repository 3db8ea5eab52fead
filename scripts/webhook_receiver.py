#!/usr/bin/env python3
"""A webhook receiver for the tests and the fault run, and the check of what it received.

  webhook_receiver.py serve --port P --ledger FILE [--fail-rate R] [--status-file F] [--delay-file F]
      Answers every POST with 200, or 500 with probability R, or the status written in F if it
      exists; sleeps the seconds written in --delay-file if it exists. Appends each request
      (path, webhook-id, -timestamp, -signature, body, the status it answered, when it arrived) to
      FILE as a JSON line. Prints "ready <port>" once listening.

  webhook_receiver.py verify --ledger FILE --secret S [--secret S ...] [--expect-ids FILE]
      Verifies every request with the official Standard Webhooks library (PyPI standardwebhooks),
      once per secret, as at the moment it arrived (the library's clock is set to it), and prints JSON: how many requests, how many each secret verified, and per
      webhook-id its type, how many deliveries, how many answered 2xx, and whether every delivery of
      it carried the same body.
"""
import argparse
import json
import os
import random
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


def serve(args):
    lock = threading.Lock()

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *a):
            pass

        def do_POST(self):
            length = int(self.headers.get("content-length") or 0)
            body = self.rfile.read(length) if length else b""
            status = 200
            if args.status_file and os.path.exists(args.status_file):
                with open(args.status_file) as f:
                    status = int(f.read().strip() or 200)
            elif random.random() < args.fail_rate:
                status = 500
            if args.delay_file and os.path.exists(args.delay_file):
                with open(args.delay_file) as f:
                    time.sleep(float(f.read().strip() or 0))
            record = {
                "path": self.path,
                "id": self.headers.get("webhook-id"),
                "timestamp": self.headers.get("webhook-timestamp"),
                "signature": self.headers.get("webhook-signature"),
                "body": body.decode("utf-8", "replace"),
                "status": status,
                "received": time.time(),
            }
            with lock:
                with open(args.ledger, "a") as f:
                    f.write(json.dumps(record) + "\n")
                    f.flush()
            answer = b'{"received": true}' if status < 300 else b"try again later"
            self.send_response(status)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(answer)))
            self.end_headers()
            self.wfile.write(answer)

    server = ThreadingHTTPServer(("127.0.0.1", args.port), Handler)
    print("ready %d" % server.server_address[1], flush=True)
    server.serve_forever()


def verify(args):
    import datetime
    import standardwebhooks.webhooks as library
    from standardwebhooks.webhooks import Webhook

    class ReceivedAt(datetime.datetime):
        """The library checks a request's timestamp against now: a receiver checks it when the
        request arrives, so the check of a ledger read later runs at each request's arrival."""
        moment = None

        @classmethod
        def now(cls, tz=None):
            return cls.moment or datetime.datetime.now(tz)

    library.datetime = ReceivedAt
    hooks = [Webhook(s) for s in args.secret]
    verified = [0] * len(hooks)
    events = {}
    records = 0
    with open(args.ledger) as f:
        for line in f:
            r = json.loads(line)
            records += 1
            ReceivedAt.moment = (
                datetime.datetime.fromtimestamp(r["received"], datetime.timezone.utc)
                if "received" in r
                else None
            )
            headers = {
                "webhook-id": r["id"],
                "webhook-timestamp": r["timestamp"],
                "webhook-signature": r["signature"],
            }
            for n, hook in enumerate(hooks):
                try:
                    hook.verify(r["body"], headers)
                    verified[n] += 1
                except Exception:
                    pass
            e = events.setdefault(r["id"], {"type": None, "deliveries": 0, "ok": 0, "same_body": True, "body": r["body"]})
            e["type"] = json.loads(r["body"])["type"]
            e["deliveries"] += 1
            e["ok"] += 1 if 200 <= r["status"] < 300 else 0
            e["same_body"] = e["same_body"] and e["body"] == r["body"]
    for e in events.values():
        del e["body"]
    print(json.dumps({"records": records, "verified_by": verified, "events": events}))


def main():
    p = argparse.ArgumentParser()
    sub = p.add_subparsers(dest="command", required=True)
    s = sub.add_parser("serve")
    s.add_argument("--port", type=int, default=0)
    s.add_argument("--ledger", required=True)
    s.add_argument("--fail-rate", type=float, default=0.0)
    s.add_argument("--status-file")
    s.add_argument("--delay-file")
    v = sub.add_parser("verify")
    v.add_argument("--ledger", required=True)
    v.add_argument("--secret", action="append", required=True)
    args = p.parse_args()
    if args.command == "serve":
        serve(args)
    else:
        verify(args)


if __name__ == "__main__":
    sys.exit(main())
