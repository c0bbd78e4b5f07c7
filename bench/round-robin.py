"""A TCP balancer for the benches that run several server processes on one PostgreSQL database:
each new connection goes to the next server in turn, and its bytes are passed both ways as they
come. The CLI keeps a pool of keep-alive connections, so its requests are spread over the
servers the way a load balancer in front of a shop's servers would spread them.

Usage: python3 bench/round-robin.py HOST:PORT [HOST:PORT ...]
Prints `listening on http://127.0.0.1:PORT` once it accepts connections.
"""

import asyncio
import itertools
import sys


async def pipe(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    try:
        while data := await reader.read(1 << 16):
            writer.write(data)
            await writer.drain()
    except (ConnectionError, asyncio.CancelledError):
        pass
    finally:
        try:
            writer.close()
        except ConnectionError:
            pass


async def main(upstreams: list[tuple[str, int]]) -> None:
    turn = itertools.cycle(upstreams)

    async def serve(client_reader: asyncio.StreamReader, client_writer: asyncio.StreamWriter) -> None:
        host, port = next(turn)
        try:
            server_reader, server_writer = await asyncio.open_connection(host, port)
        except OSError:
            client_writer.close()
            return
        await asyncio.gather(pipe(client_reader, server_writer), pipe(server_reader, client_writer))

    server = await asyncio.start_server(serve, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    print(f"listening on http://127.0.0.1:{port}", flush=True)
    async with server:
        await server.serve_forever()


if __name__ == "__main__":
    targets = []
    for arg in sys.argv[1:]:
        arg = arg.removeprefix("http://").rstrip("/")
        host, _, port = arg.rpartition(":")
        targets.append((host, int(port)))
    if not targets:
        sys.exit("usage: round-robin.py HOST:PORT [HOST:PORT ...]")
    asyncio.run(main(targets))
