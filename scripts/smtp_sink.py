#!/usr/bin/env python3
"""A real SMTP server for tests (aiosmtpd): stores each accepted message as a .eml file in --out,
logs every DATA attempt's arrival time to attempts.log, and can answer 451 (retry) or 550 (reject)
to force failures. With --tls-cert/--tls-key it requires STARTTLS (or, with --implicit-tls, speaks TLS
from the first byte); with --auth USER:PASS it requires that login, over TLS only."""
import argparse
import os
import signal
import ssl
import time

from aiosmtpd.controller import Controller
from aiosmtpd.smtp import AuthResult


class Sink:
    def __init__(self, out, fail_first, fail_always, reject_always):
        self.out = out
        self.fail_first = fail_first
        self.fail_always = fail_always
        self.reject_always = reject_always
        self.attempts = 0

    async def handle_DATA(self, server, session, envelope):
        self.attempts += 1
        with open(os.path.join(self.out, "attempts.log"), "a") as log:
            log.write(f"{time.time()}\n")
        if self.reject_always:
            # Text a tenant must never see: the relay's internal name.
            return "550 5.1.1 <nobody@relay-7.internal.example>: mailbox unavailable"
        if self.fail_always or self.attempts <= self.fail_first:
            return "451 4.3.0 Try again later"
        name = os.path.join(self.out, f"{time.time_ns()}-{self.attempts}.eml")
        with open(name + ".part", "wb") as f:
            f.write(envelope.original_content or envelope.content)
        os.rename(name + ".part", name)  # appears whole or not at all
        return "250 OK"


class Authenticator:
    def __init__(self, out, user, password):
        self.out = out
        self.user = user.encode()
        self.password = password.encode()

    def __call__(self, server, session, envelope, mechanism, auth_data):
        ok = auth_data.login == self.user and auth_data.password == self.password
        with open(os.path.join(self.out, "auth.log"), "a") as log:
            log.write(f"{mechanism} {'ok' if ok else 'refused'} tls={session.ssl is not None}\n")
        return AuthResult(success=ok)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--port", type=int, required=True)
    p.add_argument("--out", required=True)
    p.add_argument("--fail-first", type=int, default=0)
    p.add_argument("--fail-always", action="store_true")
    p.add_argument("--reject-always", action="store_true")
    p.add_argument("--tls-cert")
    p.add_argument("--tls-key")
    p.add_argument("--implicit-tls", action="store_true")
    p.add_argument("--auth")
    args = p.parse_args()
    os.makedirs(args.out, exist_ok=True)
    kwargs = {}
    if args.tls_cert:
        context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        context.load_cert_chain(args.tls_cert, args.tls_key)
        if args.implicit_tls:
            kwargs["ssl_context"] = context
        else:
            kwargs["tls_context"] = context
            kwargs["require_starttls"] = True
    if args.auth:
        user, password = args.auth.split(":", 1)
        kwargs["authenticator"] = Authenticator(args.out, user, password)
        kwargs["auth_require_tls"] = True
        kwargs["auth_required"] = True
    sink = Sink(args.out, args.fail_first, args.fail_always, args.reject_always)
    controller = Controller(sink, hostname="127.0.0.1", port=args.port, **kwargs)
    controller.start()
    print("ready", flush=True)
    signal.sigwait({signal.SIGTERM, signal.SIGINT})
    controller.stop()


if __name__ == "__main__":
    main()
