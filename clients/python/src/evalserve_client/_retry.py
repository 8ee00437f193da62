"""When to try a call again: exponential backoff with full jitter, the server's retry hint as its
floor, a cap on the attempts and on the total time, and gRPC's own retry policy for unary calls.

Full jitter (Brooker, "Exponential Backoff and Jitter", AWS Architecture Blog, 2015): the n-th
retry (n from 0) waits ``random(0, min(cap, base * 2**n))``. A server's hint (HTTP
``Retry-After``, RFC 9110 section 10.2.3; gRPC's ``google.rpc.RetryInfo`` detail or the
``grpc-retry-pushback-ms`` trailer of gRFC A6) is a floor: the wait is never shorter. A retry
that would start later than ``retry_deadline`` seconds after the first attempt is not made.

gRPC unary calls refused UNAVAILABLE are retried by the channel itself (gRFC A6: the
``retryPolicy`` of the service config, whose backoff is the same full jitter, and which honours
the server's pushback), within the call's deadline, up to ``min(retries + 1, 5)`` attempts
(gRPC's limit). The explicit loop counts each such call as that many attempts: it calls again
only when ``retries`` asks for more than gRPC allows, so a call makes at most ``retries + 1``
attempts rounded up to a multiple of 5, never ``(retries + 1) ** 2``. A RESOURCE_EXHAUSTED with
a retry hint (the server's memory is busy now) is not the channel's to retry: the loop retries
it, as one attempt.
"""

from __future__ import annotations

import json
import random
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from email.utils import parsedate_to_datetime

__all__ = [
    "CHANNEL_RETRIED",
    "GRPC_MAX_ATTEMPTS",
    "Policy",
    "Schedule",
    "full_jitter",
    "grpc_attempts",
    "retry_after",
    "service_config",
]

# gRPC clamps a retry policy's maxAttempts to 5 (gRFC A6).
GRPC_MAX_ATTEMPTS = 5
SERVICE = "evalserve.v1.EvaluationService"
UNARY_METHODS = ("Evaluate", "ListMetrics")


@dataclass(frozen=True)
class Policy:
    """The client's settings of that name: ``retries`` after the first attempt; ``backoff`` and
    ``max_backoff`` (s): the backoff's first ceiling and its largest; ``retry_deadline`` (s): no
    retry starts later than this after the first attempt started."""

    retries: int
    backoff: float
    max_backoff: float
    retry_deadline: float

    def __post_init__(self) -> None:
        if self.retries < 0:
            raise ValueError("retries: must be >= 0")
        for name in ("backoff", "max_backoff", "retry_deadline"):
            if not getattr(self, name) >= 0:
                raise ValueError(f"{name}: must be a number >= 0")


def full_jitter(retry: int, base: float, cap: float, rand: Callable[[], float]) -> float:
    """The wait before retry ``retry`` (0 for the first): uniform in [0, min(cap, base*2**retry)),
    the exponent held at 64 past 64 retries. ``rand`` returns a float in [0, 1)."""
    ceiling = min(cap, base * 2.0 ** min(retry, 64))
    return ceiling * rand()


def retry_after(value: str | None, now: Callable[[], datetime] | None = None) -> float | None:
    """The seconds of a ``Retry-After`` header: a delay in seconds or an HTTP date (RFC 9110
    section 10.2.3); None when absent or unreadable, 0 for a date in the past."""
    if value is None:
        return None
    text = value.strip()
    if text.isdigit():
        return float(text)
    try:
        when = parsedate_to_datetime(text)
    except (TypeError, ValueError, IndexError):
        return None
    if when.tzinfo is None:  # RFC 9110: an HTTP date is GMT
        when = when.replace(tzinfo=UTC)
    current = now() if now is not None else datetime.now(UTC)
    return max(0.0, (when - current).total_seconds())


@dataclass
class Schedule:
    """The retries of one call: ``pause(hint)`` after each failed attempt gives how long to wait
    before the next one, or None when no retry is left (attempts or time)."""

    policy: Policy
    clock: Callable[[], float] = time.monotonic
    rand: Callable[[], float] = random.random
    # attempts each of the loop's attempts stands for: gRPC's retry policy's (grpc_attempts)
    per_call: int = 1
    started: float = field(init=False)
    retry: int = field(init=False, default=0)
    attempts: int = field(init=False, default=0)  # made so far, the channel's retries included

    def __post_init__(self) -> None:
        self.started = self.clock()

    def pause(self, hint: float | None = None, retried: bool = True) -> float | None:
        """``retried``: whether the channel's retry policy already retried the failed attempt
        (a gRPC unary call refused with a status its policy retries); if not, it counts once."""
        self.attempts += self.per_call if retried else 1
        if self.attempts >= self.policy.retries + 1:
            return None
        # the backoff goes on from where the attempts already made left it
        exponent = self.attempts - 1
        wait = full_jitter(exponent, self.policy.backoff, self.policy.max_backoff, self.rand)
        if hint is not None:
            wait = max(wait, hint)
        if self.clock() - self.started + wait > self.policy.retry_deadline:
            return None
        self.retry += 1
        return wait


def grpc_attempts(policy: Policy) -> int:
    """The attempts gRPC's retry policy makes of one unary call."""
    return min(policy.retries + 1, GRPC_MAX_ATTEMPTS)


def _seconds(value: float) -> str:
    return f"{max(value, 0.001):.3f}s"


# The status codes the channel's retry policy retries. Not RESOURCE_EXHAUSTED: gRPC itself
# answers it for a message over the server's size limit, without a pushback trailer, and a
# policy would send that message again; the client's loop retries a RESOURCE_EXHAUSTED only
# when the server gave a retry hint (its memory is busy now).
CHANNEL_RETRIED = ("UNAVAILABLE",)


def service_config(policy: Policy) -> str:
    """The channel's service config (JSON): gRPC's retry policy for the unary methods, on
    ``CHANNEL_RETRIED``, with the client's backoff. No policy when ``retries`` is 0."""
    if policy.retries == 0:
        return json.dumps({})
    retry_policy = {
        "maxAttempts": grpc_attempts(policy),
        "initialBackoff": _seconds(policy.backoff),
        "maxBackoff": _seconds(max(policy.max_backoff, policy.backoff)),
        "backoffMultiplier": 2,
        "retryableStatusCodes": list(CHANNEL_RETRIED),
    }
    names = [{"service": SERVICE, "method": method} for method in UNARY_METHODS]
    return json.dumps({"methodConfig": [{"name": names, "retryPolicy": retry_policy}]})
