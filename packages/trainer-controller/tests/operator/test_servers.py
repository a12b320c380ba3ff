"""read_body: the whole body however it is chunked, refused past the limit."""

from __future__ import annotations

import asyncio
import socket

from aiohttp import web
from trainer_controller.operator.servers import BodyTooLarge, Listener, read_body

LIMIT = 40_000


async def _serve_and_send(raw_requests: list[list[bytes | None]]) -> list[bytes]:
    """Start a listener echoing the body length; send each request as the given pieces,
    taking the answer at a None piece (else after the last one)."""

    async def handle(request: web.Request) -> web.Response:
        try:
            body = await read_body(request, LIMIT)
        except BodyTooLarge as error:
            return web.Response(status=413, text=str(error))
        return web.Response(text=str(len(body)))

    listener = Listener([web.post("/", handle)], "127.0.0.1", 0)
    await listener.start()
    loop = asyncio.get_running_loop()
    answers = []
    try:
        for pieces in raw_requests:
            with socket.create_connection(("127.0.0.1", listener.port), timeout=30) as client:
                for piece in [*pieces, None] if None not in pieces else pieces:
                    if piece is None:
                        answers.append(await loop.run_in_executor(None, client.recv, 65536))
                        continue
                    await loop.run_in_executor(None, client.sendall, piece)
                    await asyncio.sleep(0.05)  # spread the pieces (no outcome depends on it)
    finally:
        await listener.stop()
    return answers


def _request(body: bytes, chunks: int, chunked: bool = False) -> list[bytes | None]:
    size = len(body) // chunks + 1
    parts = [body[i : i + size] for i in range(0, len(body), size)]
    if chunked:
        head = (
            b"POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n"
        )
        return [head, *(b"%x\r\n%s\r\n" % (len(part), part) for part in parts), b"0\r\n\r\n"]
    head = b"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\nConnection: close\r\n\r\n"
    return [head % len(body), *parts]


def test_a_body_sent_in_pieces_is_read_whole_and_an_oversized_one_refused() -> None:
    body = b"x" * 30_000
    answers = asyncio.run(
        _serve_and_send(
            [
                _request(body, 5),
                _request(body, 5, chunked=True),
                _request(b"x" * (LIMIT + 1), 3, chunked=True),
                # answered from the declared length, before any of the body is sent
                [*_request(b"x" * (LIMIT + 1), 1)[:1], None, b"x" * (LIMIT + 1)],
            ]
        )
    )
    assert [answer.split(b" ", 2)[1] for answer in answers] == [b"200", b"200", b"413", b"413"]
    assert answers[0].endswith(b"30000") and answers[1].endswith(b"30000")
