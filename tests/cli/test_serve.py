"""``evalserve serve`` on a port something else holds, and with a bad port: one line naming the
port, that it is in use (or what is wrong with it) and the flag and variable that choose it;
exit status 2; nothing else (no traceback, no log lines)."""

from __future__ import annotations

import socket
from collections.abc import Iterator

import pytest

from tests.cli.run import assert_refused, evalserve


@pytest.fixture
def held_port() -> Iterator[int]:
    """A port another program listens on (a plain socket, bound and listening)."""
    with socket.socket() as holder:
        holder.bind(("127.0.0.1", 0))
        holder.listen()
        yield int(holder.getsockname()[1])


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@pytest.mark.parametrize(
    ("transport", "flag", "variable"),
    [
        ("REST", "--rest-port", "EVALSERVE_REST_PORT"),
        ("gRPC", "--grpc-port", "EVALSERVE_GRPC_PORT"),
    ],
)
def test_a_port_in_use_is_one_line(
    held_port: int, transport: str, flag: str, variable: str
) -> None:
    other = "--grpc-port" if flag == "--rest-port" else "--rest-port"
    done = evalserve("serve", flag, str(held_port), other, str(_free_port()), timeout=60)
    line = assert_refused(done, f"port {held_port}", "already in use", flag, variable)
    assert transport in line


def test_the_same_port_for_both_is_one_line() -> None:
    port = str(_free_port())
    done = evalserve("serve", "--rest-port", port, "--grpc-port", port, timeout=60)
    assert_refused(done, f"port {port}", "--rest-port", "--grpc-port")


@pytest.mark.parametrize("value", ["70000", "-1", "http"])
def test_a_bad_port_value_is_one_line(value: str) -> None:
    done = evalserve("serve", "--rest-port", value, timeout=60)
    assert_refused(done, "rest", value)
