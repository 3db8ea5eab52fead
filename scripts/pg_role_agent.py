#!/usr/bin/env python3
"""HAProxy agent-check for one PostgreSQL server: answers "up" when it is a primary (accepts writes) and
"down" otherwise (a standby in recovery, or not answering). HAProxy's TCP frontend for Postgres then
routes only to the primary, before and after a failover, without the app being restarted."""
import argparse
import asyncio
import subprocess


def role(psql, host, port):
    try:
        out = subprocess.run(
            [psql, "-h", host, "-p", str(port), "-U", "postgres", "-d", "postgres", "-Atc",
             "select pg_is_in_recovery()"],
            capture_output=True, text=True, timeout=2,
        )
    except subprocess.TimeoutExpired:
        return "down"
    return "up" if out.returncode == 0 and out.stdout.strip() == "f" else "down"


async def main():
    p = argparse.ArgumentParser()
    p.add_argument("--listen", type=int, required=True)
    p.add_argument("--pg-host", required=True)
    p.add_argument("--pg-port", type=int, required=True)
    p.add_argument("--psql", default="psql")
    a = p.parse_args()

    async def answer(reader, writer):
        state = await asyncio.to_thread(role, a.psql, a.pg_host, a.pg_port)
        writer.write(f"{state}\n".encode())
        await writer.drain()
        writer.close()

    server = await asyncio.start_server(answer, "127.0.0.1", a.listen)
    print("ready", flush=True)
    async with server:
        await server.serve_forever()


asyncio.run(main())
