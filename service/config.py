"""Settings: environment variables ``EVALSERVE_*`` and command-line flags, with good defaults."""

from __future__ import annotations

from pydantic import Field, FilePath, field_validator, model_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

from evalserve.core import available_cpus
from evalserve.service.identity import ClientIdentity, canonical, parse_client_identity
from evalserve.service.memory import default_memory_budget

__all__ = ["Settings"]

MIB = 1 << 20


class Settings(BaseSettings):
    """Every knob of the service. Each field is also the env var ``EVALSERVE_<NAME>``."""

    model_config = SettingsConfigDict(env_prefix="EVALSERVE_", frozen=True)

    host: str = Field("127.0.0.1", description="address both servers listen on")
    rest_port: int = Field(8000, ge=0, le=65535, description="HTTP port (0: any free port)")
    grpc_port: int = Field(50051, ge=0, le=65535, description="gRPC port (0: any free port)")
    max_request_bytes: int = Field(
        256 * MIB,
        ge=1024,
        description="largest request body / gRPC message, in bytes (gRPC messages also at most "
        "half of memory_budget_bytes / max_inflight_requests: the share a call reserves before "
        "its message arrives; and at most 32 MiB, a copy grpcio makes holding the interpreter "
        "lock; larger inputs stream)",
    )
    max_rows: int = Field(
        10_000_000, ge=1, description="most rows in one request or one stream batch"
    )
    max_stream_rows: int = Field(10_000_000_000, ge=1, description="most rows in a whole stream")
    max_stream_state_bytes: int = Field(
        200_000_000,
        ge=1,
        description="most bytes one stream's state may hold (binary: 16 bytes per distinct "
        "score of each class; each task's metric page says what its state holds)",
    )
    max_classes: int = Field(1000, ge=2, description="most classes (score columns)")
    max_label_chars: int = Field(
        128,
        ge=1,
        description="longest class name, in characters, whether sent in classes or as a "
        "string label: class names become Prometheus label values, as model names do (which "
        "are at most 128 characters too)",
    )
    max_label_array_bytes: int = Field(
        512 * MIB,
        ge=1024,
        description="most bytes the string labels of one request or batch may take as a "
        "fixed-width array (rows x longest label x 4 bytes): a few long labels among many "
        "short ones would otherwise make every row as wide as the longest",
    )
    max_boxes_per_image: int = Field(
        2_000,
        ge=1,
        description="most ground-truth boxes, and most predicted boxes, in one image (the IoU "
        "work of an image grows with their product: 2000 x 2000 is about 0.2 s)",
    )
    max_detection_pairs: int = Field(
        50_000_000,
        ge=1,
        description="most (prediction, ground-truth box) pairs of the same image and class whose "
        "IoU one request or stream batch may need, counting at most max_detections predictions "
        "an image: a compute budget (about 3 s of one core at the default)",
    )
    max_bootstrap_work: int = Field(
        20_000_000_000,
        ge=1,
        description="most bootstrap_replicates x rows in one request or stream: a compute "
        "budget (about 3 s of one core at the default; 1000 replicates fit up to 20 million "
        "rows)",
    )
    max_curve_points: int = Field(
        100_000,
        ge=2,
        description="highest max_curve_points (and segment_curve_points) option a request may "
        "ask for (the options' own range ends at 100000)",
    )
    max_response_bytes: int = Field(
        256 * MIB,
        ge=1024,
        description="largest response, in bytes as encoded (JSON, protobuf or the HTML report); "
        "a larger one is refused instead of sent (fewer curve points, classes or segments make "
        "it smaller)",
    )
    max_segments: int = Field(
        100,
        ge=1,
        description="most distinct segments in one request (more are refused naming segments, "
        "or with fold_segments the smallest are folded into __other__); each segment's result "
        "is a response of its own inside the answer, counted by max_response_bytes and the "
        "memory budget",
    )
    workers: int = Field(
        2, ge=1, le=64, description="evaluations computed at once, off the event loop"
    )
    threads_per_evaluation: int | None = Field(
        None,
        ge=1,
        le=64,
        description="threads one evaluation's sorts may use (an evaluation of fewer than half a "
        "million rows a thread uses fewer; unset: the CPUs the process may run on divided by "
        "workers, at least 1, so that concurrent evaluations are not starved)",
    )
    max_inflight_requests: int = Field(
        16,
        ge=1,
        description="evaluation requests (streams included) accepted at once; more are refused "
        "at once with 503 / UNAVAILABLE, before their body is read",
    )
    shutdown_grace_seconds: float = Field(
        20.0, ge=0, description="time in-flight requests get to finish on SIGTERM"
    )
    max_model_series: int = Field(
        1000,
        ge=1,
        description="most (model, version, segment, class) label sets exported to Prometheus",
    )
    model_series_ttl_seconds: float = Field(
        86400.0, gt=0, description="model series not updated for this long are removed"
    )
    tls_cert_file: FilePath | None = Field(
        None,
        description="PEM certificate chain: serve REST (HTTPS) and gRPC over TLS (with "
        "tls_key_file; both unset: plaintext, for a mesh or an ingress that terminates TLS)",
    )
    tls_key_file: FilePath | None = Field(None, description="PEM private key of tls_cert_file")
    request_read_timeout_seconds: float = Field(
        30.0,
        gt=0,
        description="time a one-shot request body gets to arrive whole; past it the request is "
        "refused with 408 / DEADLINE_EXCEEDED and its admission place is freed",
    )
    stream_idle_timeout_seconds: float = Field(
        30.0,
        gt=0,
        description="longest wait for a stream's next batch (the header, an NDJSON line that "
        "is not blank, a gRPC message); past it the stream is refused with 408 / "
        "DEADLINE_EXCEEDED and its place and state are freed",
    )
    memory_budget_bytes: int | None = Field(
        None,
        ge=16 * MIB,
        description="memory the evaluations in flight may take together: each request "
        "reserves its measured cost before its body is read and is refused with 503 / "
        "RESOURCE_EXHAUSTED when it does not fit now, 413 when it never would (unset: 70% of "
        "the container's cgroup memory limit, or of the machine's memory without one)",
    )
    client_identity: str = Field(
        "off",
        description="how a client is known for max_inflight_per_client: off (no per-client "
        "limit), peer (the connection's peer address), or header:NAME (the request header, or "
        "gRPC metadata key, NAME that a trusted proxy sets: header:x-forwarded-for takes the "
        "rightmost entry, the one the nearest proxy appended; a request without it is known by "
        "its peer address; at most 256 characters are kept)",
    )
    max_inflight_per_client: int | None = Field(
        None,
        ge=1,
        description="evaluation requests one client may have in flight when client_identity is "
        "not off (unset: half of max_inflight_requests, at least 1); more are refused with 503 "
        "/ UNAVAILABLE",
    )

    @field_validator("client_identity")
    @classmethod
    def _client_identity(cls, value: str) -> str:
        return canonical(parse_client_identity(value))  # a ValueError names the setting

    @model_validator(mode="after")
    def _tls_pair(self) -> Settings:
        if (self.tls_cert_file is None) != (self.tls_key_file is None):
            raise ValueError("tls_cert_file and tls_key_file go together: set both or neither")
        return self

    @property
    def identity(self) -> ClientIdentity | None:
        """``client_identity`` as the transports use it; None: ``off``."""
        return parse_client_identity(self.client_identity)

    @property
    def per_client_limit(self) -> int | None:
        """``max_inflight_per_client``, or its default: half of ``max_inflight_requests``; None
        (no per-client limit) when ``client_identity`` is ``off``."""
        if self.identity is None:
            return None
        if self.max_inflight_per_client is not None:
            return self.max_inflight_per_client
        return max(1, self.max_inflight_requests // 2)

    @property
    def evaluation_threads(self) -> int:
        """``threads_per_evaluation``, or its default: the CPUs this process may run on shared
        among the ``workers`` (at least one each)."""
        if self.threads_per_evaluation is not None:
            return self.threads_per_evaluation
        return max(1, available_cpus() // self.workers)

    @property
    def budget_bytes(self) -> int:
        """``memory_budget_bytes``, or its default (``service.memory.default_memory_budget``)."""
        if self.memory_budget_bytes is not None:
            return self.memory_budget_bytes
        return default_memory_budget()

    @property
    def tls(self) -> bool:
        return self.tls_cert_file is not None
