"""Session-wide services for the contract tests (see ``tests/contract/servers.py``)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from evalserve.service.config import Settings
from tests.contract.servers import CAPPED, LIMITED, Service, running


@pytest.fixture(scope="session")
def service() -> Iterator[Service]:
    with running(Settings(host="127.0.0.1", rest_port=0, grpc_port=0)) as served:
        yield served


@pytest.fixture(scope="session")
def limited() -> Iterator[Service]:
    with running(LIMITED) as served:
        yield served


@pytest.fixture(scope="session")
def capped() -> Iterator[Service]:
    with running(CAPPED) as served:
        yield served
