"""TLS: ``grpcs://host:port`` and ``https://`` targets, with the server's private CA given to the
client (``root_certificates`` in Python; ``ca`` for gRPC and NODE_EXTRA_CA_CERTS for REST in
TypeScript). Recording servers on loopback, then the service itself (``tls_cert_file`` /
``tls_key_file``), present a certificate for 127.0.0.1 from a CA made for the test (trustme);
without that CA the clients refuse the server, so verification is on."""

from __future__ import annotations

import asyncio
import ssl
from collections.abc import Iterator
from pathlib import Path

import grpc
import httpx
import pytest
import trustme
from evalserve_client import AsyncClient, Client, Unavailable
from grpc_health.v1 import health_pb2, health_pb2_grpc
from pydantic import ValidationError

from evalserve import core
from evalserve.service.config import Settings
from tests.clients.recording import Recording, Seen, answer, grpc_recording, http_recording
from tests.clients.test_typescript import error, finish_cases, ok, start_cases, ts_case
from tests.contract.servers import running
from tests.contract.test_same_answer import assert_same

LABELS = [0.0, 0.0, 1.0, 1.0]
SCORES = [0.1, 0.4, 0.35, 0.8]


@pytest.fixture(scope="module")
def ca() -> trustme.CA:
    return trustme.CA()


@pytest.fixture(scope="module")
def server_cert(ca: trustme.CA) -> trustme.LeafCert:
    return ca.issue_cert("127.0.0.1", "localhost")


@pytest.fixture
def grpcs(server_cert: trustme.LeafCert) -> Iterator[tuple[str, Recording]]:
    key = server_cert.private_key_pem.bytes()
    chain = b"".join(blob.bytes() for blob in server_cert.cert_chain_pems)
    with grpc_recording(grpc.ssl_server_credentials([(key, chain)])) as (address, recording):
        yield f"grpcs://{address}", recording


@pytest.fixture
def https(server_cert: trustme.LeafCert) -> Iterator[tuple[str, Seen]]:
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    server_cert.configure_cert(context)
    with http_recording(context) as served:
        yield served


def test_the_python_client_speaks_tls_to_a_server_of_a_private_ca(
    ca: trustme.CA, grpcs: tuple[str, Recording], https: tuple[str, Seen]
) -> None:
    roots = ca.cert_pem.bytes()
    expected = answer(LABELS, SCORES).to_dict()
    for target in (grpcs[0], https[0]):
        with Client(target, root_certificates=roots, stream_threshold=2, chunk_rows=1) as client:
            assert_same(client.evaluate("binary", LABELS, SCORES).to_dict(), expected)
            assert client.list_metrics()

        async def awaited(target: str = target) -> None:
            async with AsyncClient(target, root_certificates=roots) as client:
                assert_same((await client.evaluate("binary", LABELS, SCORES)).to_dict(), expected)

        asyncio.run(awaited())
    assert [method for method, _ in grpcs[1].seen] == ["EvaluateStream", "ListMetrics", "Evaluate"]
    assert [path for path, _ in https[1]] == ["/v1/evaluate/stream", "/v1/metrics", "/v1/evaluate"]


def test_without_the_ca_the_python_client_refuses_the_server(
    grpcs: tuple[str, Recording], https: tuple[str, Seen]
) -> None:
    for target in (grpcs[0], https[0]):
        with Client(target, retries=0, timeout=10) as client, pytest.raises(Unavailable):
            client.evaluate("binary", LABELS, SCORES)
    assert grpcs[1].seen == [] and https[1] == []  # no call reached either server


def test_the_typescript_client_speaks_tls_to_a_server_of_a_private_ca(
    ca: trustme.CA, grpcs: tuple[str, Recording], https: tuple[str, Seen], tmp_path: Path
) -> None:
    pem = ca.cert_pem.bytes().decode()
    bundle = tmp_path / "ca.pem"
    bundle.write_text(pem)
    cases = [
        ts_case("grpcs", grpcs[0], "binary", LABELS, SCORES, settings={"ca": pem}),
        ts_case("grpcs-stream", grpcs[0], "binary", LABELS, SCORES,
                settings={"ca": pem, "streamThreshold": 2, "chunkRows": 1}),
    ]  # fmt: skip
    answers = finish_cases(start_cases(cases, tmp_path), cases)
    # NODE_EXTRA_CA_CERTS is how Node's fetch trusts another CA (read when Node starts)
    rest = [ts_case("https", https[0], "binary", LABELS, SCORES)]
    extra = {"NODE_EXTRA_CA_CERTS": str(bundle)}
    answers |= finish_cases(start_cases(rest, tmp_path, env=extra), rest)
    refused = [
        ts_case(f"{name}-without-the-ca", target, "binary", LABELS, SCORES,
                settings={"retries": 0, "timeoutMs": 10000})
        for name, target in (("grpcs", grpcs[0]), ("https", https[0]))
    ]  # fmt: skip
    answers |= finish_cases(start_cases(refused, tmp_path), refused)
    expected = answer(LABELS, SCORES).to_dict()
    for case in ("grpcs", "grpcs-stream", "https"):
        assert ok(answers, case)["metrics"] == expected["metrics"], case
    for case in ("grpcs-without-the-ca", "https-without-the-ca"):
        assert error(answers, case)["type"] == "Unavailable", case
    assert [method for method, _ in grpcs[1].seen] == ["Evaluate", "EvaluateStream"]
    assert [path for path, _ in https[1]] == ["/v1/evaluate"]


# --- the service itself over TLS ---------------------------------------------------------------


@pytest.fixture(scope="module")
def tls_service(
    server_cert: trustme.LeafCert, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[str, str]]:
    """The real service with tls_cert_file / tls_key_file: (https URL, grpcs target)."""
    folder = tmp_path_factory.mktemp("tls")
    cert, key = folder / "cert.pem", folder / "key.pem"
    cert.write_bytes(b"".join(blob.bytes() for blob in server_cert.cert_chain_pems))
    server_cert.private_key_pem.write_to_path(str(key))
    settings = Settings(
        host="127.0.0.1", rest_port=0, grpc_port=0, tls_cert_file=cert, tls_key_file=key
    )
    with running(settings) as served:
        yield (
            served.url.replace("http://", "https://"),
            f"grpcs://{served.grpc_target}",
        )


def test_the_service_serves_both_doors_over_tls(
    ca: trustme.CA, tls_service: tuple[str, str]
) -> None:
    roots = ca.cert_pem.bytes()
    expected = core.evaluate("binary", LABELS, SCORES).to_dict()
    for target in tls_service:
        with Client(target, root_certificates=roots, stream_threshold=2, chunk_rows=1) as client:
            assert_same(client.evaluate("binary", LABELS, SCORES).to_dict(), expected)
        with Client(target, root_certificates=roots) as client:
            assert_same(client.evaluate("binary", LABELS, SCORES).to_dict(), expected)
            listed = [(entry.task, entry.name) for entry in client.list_metrics()]
            assert listed == list(core.CATALOG)
        with Client(target, retries=0, timeout=10) as client, pytest.raises(Unavailable):
            client.evaluate("binary", LABELS, SCORES)  # the system's CAs do not know this one
    verify = ssl.create_default_context(cadata=roots.decode())
    with httpx.Client(base_url=tls_service[0], verify=verify) as rest:
        assert rest.get("/healthz").status_code == 200
        assert "evalserve_requests_total" in rest.get("/metrics").text
    credentials = grpc.ssl_channel_credentials(root_certificates=roots)
    with grpc.secure_channel(tls_service[1].removeprefix("grpcs://"), credentials) as channel:
        health = health_pb2_grpc.HealthStub(channel)
        answer = health.Check(health_pb2.HealthCheckRequest(), timeout=10)  # type: ignore[attr-defined]  # the stub's .pyi lacks Check
        assert answer.status == health_pb2.HealthCheckResponse.SERVING


def test_the_typescript_client_reaches_the_service_over_tls(
    ca: trustme.CA, tls_service: tuple[str, str], tmp_path: Path
) -> None:
    pem = ca.cert_pem.bytes().decode()
    bundle = tmp_path / "ca.pem"
    bundle.write_text(pem)
    https_url, grpcs_target = tls_service
    cases = [
        ts_case("service-grpcs", grpcs_target, "binary", LABELS, SCORES, settings={"ca": pem}),
        ts_case("service-https", https_url, "binary", LABELS, SCORES),
    ]
    extra = {"NODE_EXTRA_CA_CERTS": str(bundle)}
    answers = finish_cases(start_cases(cases, tmp_path, env=extra), cases)
    expected = core.evaluate("binary", LABELS, SCORES).to_dict()
    for case in ("service-grpcs", "service-https"):
        assert ok(answers, case)["metrics"] == expected["metrics"], case


def test_a_certificate_without_its_key_or_a_missing_file_is_refused(tmp_path: Path) -> None:
    cert = tmp_path / "cert.pem"
    cert.write_text("-----BEGIN CERTIFICATE-----\n")
    with pytest.raises(ValidationError, match="set both or neither"):
        Settings(tls_cert_file=cert)
    with pytest.raises(ValidationError, match="does not point to a file"):
        Settings(tls_cert_file=cert, tls_key_file=tmp_path / "missing.pem")


def test_the_command_line_says_which_tls_file_is_missing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from evalserve.cli import main

    missing = tmp_path / "missing.pem"
    with pytest.raises(SystemExit) as stopped:
        main(["serve", "--tls-cert-file", str(missing), "--tls-key-file", str(missing)])
    assert stopped.value.code == 2  # a usage error, in one line on stderr
    error = capsys.readouterr().err
    assert error.startswith("evalserve: bad setting: ")
    assert "tls_key_file: Path does not point to a file" in error
    assert error.count("\n") == 1
