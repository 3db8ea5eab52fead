#!/usr/bin/env python3
"""A real SMTP server for tests (aiosmtpd): stores each accepted message as a .eml file in --out,
logs every DATA attempt's arrival time to attempts.log, and can answer 451 to force retries."""
import argparse
import os
import signal
import time

from aiosmtpd.controller import Controller


class Sink:
    def __init__(self, out, fail_first, fail_always):
        self.out = out
        self.fail_first = fail_first
        self.fail_always = fail_always
        self.attempts = 0

    async def handle_DATA(self, server, session, envelope):
        self.attempts += 1
        with open(os.path.join(self.out, "attempts.log"), "a") as log:
            log.write(f"{time.time()}\n")
        if self.fail_always or self.attempts <= self.fail_first:
            return "451 4.3.0 Try again later"
        name = os.path.join(self.out, f"{time.time_ns()}-{self.attempts}.eml")
        with open(name + ".part", "wb") as f:
            f.write(envelope.original_content or envelope.content)
        os.rename(name + ".part", name)  # appears whole or not at all
        return "250 OK"


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--port", type=int, required=True)
    p.add_argument("--out", required=True)
    p.add_argument("--fail-first", type=int, default=0)
    p.add_argument("--fail-always", action="store_true")
    args = p.parse_args()
    os.makedirs(args.out, exist_ok=True)
    controller = Controller(Sink(args.out, args.fail_first, args.fail_always), hostname="127.0.0.1", port=args.port)
    controller.start()
    print("ready", flush=True)
    signal.sigwait({signal.SIGTERM, signal.SIGINT})
    controller.stop()


if __name__ == "__main__":
    main()
