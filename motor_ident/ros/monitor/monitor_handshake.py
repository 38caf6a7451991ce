"""The monitor's listening socket: Foxglove clients of either WebSocket subprotocol name, one server.

Foxglove's WebSocket protocol is named ``foxglove.websocket.v1`` by the clients written before the
Foxglove SDK (Foxglove Studio, Lichtblick up to 1.21, anything built on ``@foxglove/ws-protocol``)
and ``foxglove.sdk.v1`` by the SDK, whose server answers any other name with HTTP 400 and has no
option to accept the old one. The two protocols are the same apart from the name, so
`HandshakeProxy` listens where the monitor was asked to, passes each connection to the SDK's
server (on a free port of 127.0.0.1) and, when a client offers only the old name, renames it in
the request (``foxglove.sdk.v1``) and back in the server's answer, so the client sees the
subprotocol it asked for. Everything after the two handshake headers passes unchanged in both
directions; a client that offers neither name gets the SDK's 400 as before.

Rejected: patching the SDK's compiled server (nothing to patch from Python), a second port for
old clients (users would have to know which port their viewer needs).
"""

from __future__ import annotations

import contextlib
import socket
import threading

SDK_SUBPROTOCOL = "foxglove.sdk.v1"
LEGACY_SUBPROTOCOL = "foxglove.websocket.v1"
MAX_HEADER_BYTES = 16384  # an HTTP upgrade request or answer longer than this is refused
HANDSHAKE_TIMEOUT_S = 10.0  # a client that does not finish its request in this time is dropped
MAX_CONNECTIONS = 64  # more clients at once are refused (each costs two threads)
CHUNK_BYTES = 65536
_HEADER = b"sec-websocket-protocol:"


def offered_subprotocols(head: bytes) -> list[str]:
    """The subprotocols an HTTP upgrade request's ``Sec-WebSocket-Protocol`` header(s) offer, in order."""
    offered: list[str] = []
    for line in head.split(b"\r\n")[1:]:
        if line.lower().startswith(_HEADER):
            offered += [p.strip() for p in line[len(_HEADER) :].decode("latin-1").split(",") if p.strip()]
    return offered


def rename_subprotocol(head: bytes, new: str) -> bytes:
    """``head`` (an HTTP request or answer without its blank line) with its ``Sec-WebSocket-Protocol``
    header(s) replaced by one naming ``new``."""
    lines = head.split(b"\r\n")
    kept = [line for line in lines if not line.lower().startswith(_HEADER)]
    return b"\r\n".join([*kept, f"Sec-WebSocket-Protocol: {new}".encode()])


def _read_head(sock: socket.socket) -> tuple[bytes, bytes] | None:
    """An HTTP head read from ``sock`` (without its blank line) and the bytes after it; None if
    the peer closed first or the head is longer than `MAX_HEADER_BYTES`."""
    data = b""
    while b"\r\n\r\n" not in data:
        if len(data) > MAX_HEADER_BYTES:
            return None
        chunk = sock.recv(4096)
        if not chunk:
            return None
        data += chunk
    head, rest = data.split(b"\r\n\r\n", 1)
    return head, rest


class HandshakeProxy:
    """Listens on ``host``:``port`` (0: any free port) and passes each connection to the server on
    127.0.0.1:``upstream_port``, renaming the old subprotocol in the handshake (module docstring).

    Raises:
        OSError: ``host``:``port`` cannot be bound (in use, no such address).
    """

    def __init__(self, *, host: str, port: int, upstream_port: int) -> None:
        family = socket.AF_INET6 if ":" in host else socket.AF_INET
        self.listener = socket.create_server((host, port), family=family)
        self.port = int(self.listener.getsockname()[1])
        self.upstream = ("127.0.0.1", upstream_port)
        self.renamed = 0  # connections whose client offered only the old subprotocol
        self._connections: set[socket.socket] = set()
        self._lock = threading.Lock()
        self._stopped = False
        self._thread = threading.Thread(target=self._accept, name="monitor-handshake", daemon=True)
        self._thread.start()

    @property
    def open_connections(self) -> int:
        """Sockets held for clients and their server ends (two per connected client)."""
        with self._lock:
            return len(self._connections)

    def stop(self) -> None:
        """Stop listening and close every connection."""
        self._stopped = True
        with contextlib.suppress(OSError):
            self.listener.shutdown(socket.SHUT_RDWR)  # wakes the accepting thread
        self.listener.close()
        with self._lock:
            open_sockets = list(self._connections)
        for sock in open_sockets:
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)
        self._thread.join(timeout=5.0)

    def _accept(self) -> None:
        while not self._stopped:
            try:
                client, _ = self.listener.accept()
            except OSError:
                return  # stopped
            with self._lock:
                full = len(self._connections) >= 2 * MAX_CONNECTIONS
            if full:
                client.close()
                continue
            threading.Thread(target=self._serve, args=(client,), name="monitor-client", daemon=True).start()

    def _track(self, *socks: socket.socket) -> None:
        with self._lock:
            self._connections.update(socks)

    def _serve(self, client: socket.socket) -> None:
        """One connection: the handshake (renamed if needed), then bytes both ways until either side closes."""
        upstream: socket.socket | None = None
        try:
            self._track(client)
            client.settimeout(HANDSHAKE_TIMEOUT_S)
            request = _read_head(client)
            if request is None:
                with contextlib.suppress(OSError):
                    client.sendall(b"HTTP/1.1 431 Request Header Fields Too Large\r\nConnection: close\r\n\r\n")
                return
            head, rest = request
            offered = offered_subprotocols(head)
            rename = LEGACY_SUBPROTOCOL in offered and SDK_SUBPROTOCOL not in offered
            if rename:
                head = rename_subprotocol(head, SDK_SUBPROTOCOL)
            upstream = socket.create_connection(self.upstream, timeout=HANDSHAKE_TIMEOUT_S)
            self._track(upstream)
            for sock in (client, upstream):
                sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)  # small frames go out at once
            upstream.sendall(head + b"\r\n\r\n" + rest)
            if rename:
                answer = _read_head(upstream)
                if answer is None:
                    return
                answer_head, answer_rest = answer
                if b" 101 " in answer_head.split(b"\r\n", 1)[0]:
                    answer_head = rename_subprotocol(answer_head, LEGACY_SUBPROTOCOL)
                    self.renamed += 1
                client.sendall(answer_head + b"\r\n\r\n" + answer_rest)
            client.settimeout(None)
            upstream.settimeout(None)
            back = threading.Thread(target=_pipe, args=(upstream, client), name="monitor-client-out", daemon=True)
            back.start()
            _pipe(client, upstream)
            back.join()
        except OSError:
            pass  # the client or the server went away during the handshake
        finally:
            for end in (client, upstream):
                if end is not None:
                    end.close()
                    with self._lock:
                        self._connections.discard(end)


def _pipe(source: socket.socket, destination: socket.socket) -> None:
    """Copy ``source`` to ``destination`` until ``source`` ends; then end ``destination``'s writing
    side (an error: both sides, so the opposite copy ends too)."""
    buffer = bytearray(CHUNK_BYTES)
    view = memoryview(buffer)
    try:
        while True:
            count = source.recv_into(buffer)
            if count == 0:
                break
            destination.sendall(view[:count])
        with contextlib.suppress(OSError):
            destination.shutdown(socket.SHUT_WR)
    except OSError:
        for sock in (source, destination):
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)
