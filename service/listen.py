"""The ports the servers listen on, checked before either starts: a port that something else
holds (or that this user may not take, or an address this machine does not have) is one
``ListenError`` naming the port, the transport and the flag and variable that choose it, not a
traceback from deep in uvicorn or grpc."""

from __future__ import annotations

import errno
import socket

__all__ = ["ListenError", "check_ports"]

_CHOOSE = {
    "REST": ("--rest-port", "EVALSERVE_REST_PORT"),
    "gRPC": ("--grpc-port", "EVALSERVE_GRPC_PORT"),
}


class ListenError(OSError):
    """A server cannot listen where the settings say; the message says why and what to change."""


def check_ports(host: str, rest_port: int, grpc_port: int) -> None:
    """Raise ``ListenError`` when the REST or the gRPC port cannot be listened on at ``host``
    (0, any free port, always can), or when both are the same port."""
    if rest_port == grpc_port != 0:
        raise ListenError(
            f"evalserve: port {rest_port} is both the REST and the gRPC port: give them "
            "different ports (--rest-port and --grpc-port, or EVALSERVE_REST_PORT and "
            "EVALSERVE_GRPC_PORT; 0 picks a free one)"
        )
    for transport, port in (("REST", rest_port), ("gRPC", grpc_port)):
        check_port(host, port, transport)


def check_port(host: str, port: int, transport: str) -> None:
    """Bind ``host:port`` as the server will (address reuse on, as uvicorn does) and let go."""
    if port == 0:
        return
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind((host, port))
        except OSError as error:
            raise listen_error(host, port, transport, error) from None


def listen_error(host: str, port: int, transport: str, error: OSError | None) -> ListenError:
    """The one-line error of ``transport`` not listening on ``host:port``."""
    flag, variable = _CHOOSE[transport]
    change = f"choose another with {flag} or {variable} (0 picks a free port)"
    if error is not None and error.errno == errno.EADDRINUSE:
        why = "is already in use (another program listens on it)"
    elif error is not None and error.errno == errno.EACCES:
        why = "is not open to this user (ports below 1024 need privileges)"
    elif isinstance(error, socket.gaierror) or (
        error is not None and error.errno == errno.EADDRNOTAVAIL
    ):
        why = f"cannot be listened on: this machine has no address {host}"
        change = "choose the address with --host or EVALSERVE_HOST"
    elif error is not None:
        why = f"cannot be listened on: {error.strerror or error}"
    else:
        why = "cannot be listened on"
    return ListenError(f"evalserve: {transport} port {port} on {host} {why}; {change}")
