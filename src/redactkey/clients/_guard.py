"""The network guard: while a test runs, refuse connections that no recorder face makes.

It patches `socket.socket.connect` and `connect_ex` only while it is entered, and puts
back exactly what it found. asyncio's selector loop (create_connection, sock_connect)
ends in `sock.connect`, and `ssl.SSLSocket` subclasses `socket.socket`, so the two cover
every path through the socket module. The refusal names the face that records the
client that tried (found from the calling frames), so the advice fits the client.
"""

from __future__ import annotations

import ipaddress
import socket
import sys
from types import FrameType
from typing import Any, Final

from .._errors import FixtureError

__all__ = ["NetworkGuard", "NetworkRefusedError", "face_for_caller"]

# The package of a frame on the way to `connect`, by the face that records its client;
# the outermost one found is the client the test called.
_CLIENTS: Final = {
    "boto3": "boto3", "botocore": "boto3", "requests": "requests", "urllib3": "requests",
    "aiohttp": "aiohttp", "httpx": "httpx", "httpx2": "httpx", "httpcore": "httpx",
    "httpcore2": "httpx", "openai": "httpx", "anthropic": "httpx",
}
_FACES: Final = {
    "boto3": "build the client with redactkey.boto3_client(service, ...) (in replay it "
             "needs no AWS credentials and makes no connection)",
    "requests": "send it through redactkey.requests_session()",
    "aiohttp": "open the session with redactkey.aiohttp_session()",
    "httpx": "give the client the recorder's transport "
             "(http_client=httpx2.Client(transport=redactkey.transport()))",
    None: "send it through a face of the redactkey fixture: transport() (httpx, httpx2 and "
          "the SDKs built on them), requests_session(), aiohttp_session() or "
          "boto3_client(service)",
}
# Where botocore looks for credentials when it finds none in the environment.
_INSTANCE_METADATA: Final = frozenset({"169.254.169.254", "fd00:ec2::254"})
_INHERITED: Final = object()


def face_for_caller() -> str | None:
    """The face ("boto3", "requests", "aiohttp", "httpx") of the client library that is
    connecting, from the calling frames; None when no known client is among them."""
    found = None
    frame: FrameType | None = sys._getframe(1)
    while frame is not None:
        package = str(frame.f_globals.get("__name__", "")).partition(".")[0]
        found = _CLIENTS.get(package, found)
        frame = frame.f_back
    return found


class NetworkRefusedError(FixtureError):
    """A test tried to reach the network while redactkey replays (or, recording, past
    every redactkey face of a test that took one).

    Deliberately not an ``OSError``: HTTP clients turn ``OSError`` into their own
    connection errors and SDKs retry those, hiding the message.
    """

    def __init__(self, nodeid: str, target: str, mode: str, *, face: str | None = None,
                 how_to_record: str = "run with --redactkey-mode=record (or auto)") -> None:
        self.nodeid = nodeid
        self.target = target
        self.mode = mode
        self.face = face
        if mode == "replay":
            why = (f"redactkey replays (mode {mode}) and a replay run never reaches the "
                   f"network; {how_to_record}")
        else:
            # Recording: the connection bypassed every face, so nothing of it would be
            # recorded and its replay would reach the network (docs/clients.md).
            why = (f"it did not go through a redactkey face (mode {mode}), so it would not "
                   "be recorded and its replay would reach the network; fill every client "
                   "slot, sync and async (docs/clients.md)")
        if target.rpartition(":")[0].strip("[]") in _INSTANCE_METADATA:
            why += "; botocore was looking for AWS credentials at the instance metadata address"
        super().__init__(f"{nodeid}: network connection to {target} refused: {why}; "
                         f"{_FACES.get(face, _FACES[None])}; or allow local servers with "
                         "--redactkey-allow-loopback")


def _target(address: Any) -> tuple[str, str] | None:
    """(host, "host:port") for an internet address, None for anything else (AF_UNIX, ...)."""
    if isinstance(address, tuple) and len(address) >= 2 and isinstance(address[0], str):
        host, port = address[0], address[1]
        return host, (f"[{host}]:{port}" if ":" in host else f"{host}:{port}")
    return None


def _is_loopback(host: str) -> bool:
    if host.lower() in ("localhost", "localhost.localdomain", "ip6-localhost"):
        return True
    try:
        return ipaddress.ip_address(host.split("%", 1)[0]).is_loopback
    except ValueError:
        return False


class NetworkGuard:
    """Refuses outgoing internet connections of one test while entered (each test phase).

    `blocked` (test -> targets) collects what was refused, and `refused` the errors
    raised (a client may swallow one: botocore does while it looks for credentials); the
    connections a face sends live (`sending_live`) and, with `allow_loopback`, local ones
    pass.
    """

    def __init__(self, nodeid: str, mode: str, *, allow_loopback: bool,
                 blocked: dict[str, list[str]], how_to_record: str) -> None:
        self.nodeid = nodeid
        self.mode = mode
        self.allow_loopback = allow_loopback
        self.blocked = blocked
        self.how_to_record = how_to_record
        self.refused: list[NetworkRefusedError] = []
        self._saved: tuple[Any, Any] = (_INHERITED, _INHERITED)

    def check(self, sock: socket.socket, address: Any) -> None:
        """Raise `NetworkRefusedError` for a connection this guard refuses."""
        if sock.family not in (socket.AF_INET, socket.AF_INET6):
            return
        # (imported here: a run whose tests connect nowhere never loads the HTTP layer)
        from ..record._wire import sending_live

        target = _target(address)
        if target is None or (self.allow_loopback and _is_loopback(target[0])) or sending_live():
            return
        self.blocked.setdefault(self.nodeid, []).append(target[1])
        # socket.create_connection closes its socket only on OSError; close it here so a
        # refused connection leaves no unclosed-socket ResourceWarning behind.
        sock.close()
        error = NetworkRefusedError(self.nodeid, target[1], self.mode, face=face_for_caller(),
                                    how_to_record=self.how_to_record)
        self.refused.append(error)
        raise error

    def __enter__(self) -> None:
        cls = socket.socket
        own = cls.__dict__  # what to put back: the class's own attribute, or none
        self._saved = (own.get("connect", _INHERITED), own.get("connect_ex", _INHERITED))
        check, connect, connect_ex = self.check, cls.connect, cls.connect_ex

        def guarded_connect(sock: socket.socket, address: Any) -> None:
            check(sock, address)
            connect(sock, address)

        def guarded_connect_ex(sock: socket.socket, address: Any) -> int:
            check(sock, address)
            return connect_ex(sock, address)

        cls.connect = guarded_connect  # type: ignore[method-assign,assignment]
        cls.connect_ex = guarded_connect_ex  # type: ignore[method-assign,assignment]

    def __exit__(self, *exc: object) -> None:
        cls = socket.socket
        for name, value in zip(("connect", "connect_ex"), self._saved, strict=True):
            if value is _INHERITED:
                delattr(cls, name)
            else:
                setattr(cls, name, value)
