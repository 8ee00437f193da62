"""The ``client_identity`` setting: how it is read, refused when it makes no sense, and how a
client's identity comes out of a forwarded header (the rightmost entry, bounded in length).
The servers that count by it are in ``test_admission.py``."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from evalserve import cli
from evalserve.service.config import Settings
from evalserve.service.errors import BusyError, ClientBusyError
from evalserve.service.evaluator import Evaluator
from evalserve.service.identity import (
    MAX_IDENTITY_CHARS,
    ClientIdentity,
    parse_client_identity,
    rightmost_entry,
)

FORWARDED = ClientIdentity("x-forwarded-for")


@pytest.mark.parametrize(
    ("value", "client"),
    [
        ("10.1.0.3", "10.1.0.3"),
        ("198.51.100.7, 10.1.0.3", "10.1.0.3"),  # the entry the nearest proxy appended
        ("198.51.100.7,10.1.0.3", "10.1.0.3"),
        ("  198.51.100.7 ,  2001:db8::1  ", "2001:db8::1"),
        ("unknown, , 10.1.0.3", "10.1.0.3"),
        ("10.1.0.3,", ""),  # a blank last entry names nobody
        ("", ""),
    ],
)
def test_the_rightmost_entry_of_a_forwarded_list_is_the_client(value: str, client: str) -> None:
    assert rightmost_entry(value) == client


def test_an_identity_is_cut_to_its_longest() -> None:
    long = "x" * 20_000
    assert rightmost_entry(long) == "x" * MAX_IDENTITY_CHARS
    assert rightmost_entry(f"10.0.0.1, {long}") == "x" * MAX_IDENTITY_CHARS
    assert FORWARDED.of(long + "y", "127.0.0.1") == "x" * MAX_IDENTITY_CHARS
    assert ClientIdentity().of(None, "/run/" + long) == ("/run/" + long)[:MAX_IDENTITY_CHARS]


def test_without_the_header_a_client_is_its_peer_address() -> None:
    assert FORWARDED.of(None, "127.0.0.1") == "127.0.0.1"
    assert FORWARDED.of("", "127.0.0.1") == "127.0.0.1"
    assert FORWARDED.of(" , ", "127.0.0.1") == "127.0.0.1"
    assert FORWARDED.of("10.0.0.1, 10.0.0.2", "127.0.0.1") == "10.0.0.2"
    assert ClientIdentity().of("10.0.0.2", "127.0.0.1") == "127.0.0.1"  # peer: no header read
    assert FORWARDED.of(None, None) is None


@pytest.mark.parametrize(
    ("setting", "identity", "canonical"),
    [
        ("off", None, "off"),
        ("peer", ClientIdentity(), "peer"),
        ("header:x-forwarded-for", FORWARDED, "header:x-forwarded-for"),
        (" Header: X-Forwarded-For ", FORWARDED, "header:x-forwarded-for"),
        ("header:x-workload-id", ClientIdentity("x-workload-id"), "header:x-workload-id"),
    ],
)
def test_the_setting_reads_off_peer_or_a_header(
    setting: str, identity: ClientIdentity | None, canonical: str
) -> None:
    assert parse_client_identity(setting) == identity
    settings = Settings(client_identity=setting)
    assert settings.client_identity == canonical
    assert settings.identity == identity


def test_the_default_is_off_and_then_no_client_has_a_limit() -> None:
    settings = Settings()
    assert settings.client_identity == "off"
    assert settings.identity is None
    assert settings.per_client_limit is None
    assert Settings(max_inflight_per_client=3).per_client_limit is None
    assert Settings(client_identity="peer", max_inflight_requests=16).per_client_limit == 8
    assert Settings(client_identity="peer", max_inflight_per_client=3).per_client_limit == 3


BAD = [
    "on",
    "address",
    "header",
    "header:",
    "header:x forwarded for",
    "header::authority",
    "header:x-forwarded-for,x-real-ip",
    "header:grpc-status-details-bin",
    "header:x-identity-bin",
    "header:grpc-timeout",
]


@pytest.mark.parametrize("value", BAD)
def test_a_setting_that_names_no_header_is_refused(value: str) -> None:
    with pytest.raises(ValidationError, match="client_identity") as refused:
        Settings(client_identity=value)
    assert "expected off, peer or header:<name>" in str(refused.value)


def test_a_bad_value_stops_the_start_naming_the_setting(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as flag:
        cli.main(["serve", "--client-identity", "header:x forwarded"])
    assert flag.value.code == 2
    message = capsys.readouterr().err
    assert message.startswith("evalserve: bad setting: client_identity: ")
    assert "header:<name>" in message and "'x forwarded' is not a header name" in message
    monkeypatch.setenv("EVALSERVE_CLIENT_IDENTITY", "proxy")
    with pytest.raises(SystemExit) as variable:
        cli.main(["serve"])
    assert variable.value.code == 2
    message = capsys.readouterr().err
    assert message.startswith("evalserve: bad setting: client_identity: ")
    assert "but got 'proxy'" in message


def test_the_evaluator_counts_clients_only_under_a_per_client_limit() -> None:
    unlimited = Evaluator(1, max_inflight=3)
    limited = Evaluator(1, max_inflight=4, max_per_client=1)
    try:
        with (
            unlimited.admitted("a"),
            unlimited.admitted("a"),
            unlimited.admitted("a"),
            pytest.raises(BusyError, match="max_inflight_requests"),
            unlimited.admitted("b"),
        ):
            pass
        with (
            limited.admitted("a"),
            limited.admitted("b"),
            limited.admitted(None),
            pytest.raises(ClientBusyError, match="max_inflight_per_client"),
            limited.admitted("a"),
        ):
            pass
        assert limited.inflight == 0
        with limited.admitted("a"):  # the place of "a" was freed
            pass
    finally:
        unlimited.close()
        limited.close()
