"""The contract tests' session service (a real server on loopback, both doors), reused, and a
server with small row limits, over which the clients stream."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.contract.conftest import service
from tests.contract.servers import ROW_LIMITED, Service, running

__all__ = ["limited", "service"]


@pytest.fixture(scope="session")
def limited() -> Iterator[Service]:
    """Row limits only (2 000 rows a request, 3 000 a stream): not the bad-input table's caps
    against amplification, which would refuse the clients' ordinary answers."""
    with running(ROW_LIMITED) as served:
        yield served
