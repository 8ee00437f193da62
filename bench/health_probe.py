"""Health probes, as a kubelet sends them, from a process of their own: ``/healthz``,
``/readyz`` and gRPC health (service ""), one round every 50 ms for SECONDS; prints each
probe's latencies in seconds (-1 for a probe that failed) as JSON.

    python bench/health_probe.py http://HOST:REST_PORT HOST:GRPC_PORT SECONDS

Used by bench/load.py and by tests/service/test_health_latency.py.
"""

from __future__ import annotations

import json
import sys
import time

import grpc
import httpx
from grpc_health.v1 import health_pb2


def probe(rest: str, target: str, seconds: float) -> dict[str, list[float]]:
    kinds: dict[str, list[float]] = {"healthz": [], "readyz": [], "grpc health": []}
    with (
        httpx.Client(base_url=rest, timeout=30) as client,
        grpc.insecure_channel(target) as channel,
    ):
        check: grpc.UnaryUnaryMultiCallable[
            health_pb2.HealthCheckRequest, health_pb2.HealthCheckResponse
        ] = channel.unary_unary(
            "/grpc.health.v1.Health/Check",
            request_serializer=health_pb2.HealthCheckRequest.SerializeToString,
            response_deserializer=health_pb2.HealthCheckResponse.FromString,
        )
        end = time.monotonic() + seconds
        while time.monotonic() < end:
            for kind, latencies in kinds.items():
                started = time.perf_counter()
                try:
                    if kind == "grpc health":
                        reply = check(health_pb2.HealthCheckRequest(service=""), timeout=30)
                        ok = reply.status == health_pb2.HealthCheckResponse.SERVING
                    else:
                        ok = client.get("/" + kind).status_code == 200
                except (grpc.RpcError, httpx.HTTPError) as error:
                    print(f"{kind}: {error!r}", file=sys.stderr)
                    ok = False
                latencies.append(time.perf_counter() - started if ok else -1.0)
            time.sleep(0.05)
    return kinds


if __name__ == "__main__":
    print(json.dumps(probe(sys.argv[1], sys.argv[2], float(sys.argv[3]))))
