"""How a client is known for ``max_inflight_per_client``: the ``client_identity`` setting.

``off``: no per-client limit. ``peer``: the connection's peer address. ``header:<name>``: the
value of a request header (gRPC: the metadata key) that a trusted proxy sets; a comma-separated
list such as ``X-Forwarded-For`` names the client in its rightmost entry, the one the nearest
proxy appended (the entries before it are whatever the client and the proxies further away
wrote: anybody may forge them). A request without the header is known by its peer address.

Each transport reads the header and the peer its own way (``service.rest``,
``service.grpc_server``) and hands both to ``ClientIdentity.of``; the use case's ``Evaluator``
counts the requests of each client.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

__all__ = [
    "MAX_IDENTITY_CHARS",
    "ClientIdentity",
    "canonical",
    "parse_client_identity",
    "rightmost_entry",
]

# The longest identity kept: a longer value is cut, so that no header, however long, makes an
# entry of the per-client count large (there are at most max_inflight_requests entries).
MAX_IDENTITY_CHARS = 256

# An HTTP field name (RFC 9110's token), as written in the setting.
_FIELD_NAME = re.compile(r"[!#$%&'*+.^_`|~0-9a-z-]+")
_HEADER_PREFIX = "header:"
_EXPECTED = (
    "expected off, peer or header:<name> (the request header, or gRPC metadata key, that a "
    "trusted proxy sets, such as header:x-forwarded-for)"
)


@dataclass(frozen=True, slots=True)
class ClientIdentity:
    """A client is known by the header ``header`` (lowercase), or without it (``header``
    None, or a request that does not carry it) by its peer address."""

    header: str | None = None
    # The header's name as an ASGI scope spells it (lowercase bytes).
    header_bytes: bytes | None = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        name = None if self.header is None else self.header.encode("ascii")
        object.__setattr__(self, "header_bytes", name)

    def of(self, header_value: str | None, peer: str | None) -> str | None:
        """The client's identity: the rightmost entry of the header's value when the request
        carries it (and it is not blank), else the peer address; at most
        ``MAX_IDENTITY_CHARS``. ``header_value`` is ignored when no header is named."""
        if self.header is not None and header_value is not None:
            entry = rightmost_entry(header_value)
            if entry:
                return entry
        return None if peer is None else peer[:MAX_IDENTITY_CHARS]


def rightmost_entry(value: str) -> str:
    """The last entry of a comma-separated header value, without the spaces around it, cut to
    ``MAX_IDENTITY_CHARS``: ``"198.51.100.7, 10.1.0.3"`` -> ``"10.1.0.3"``."""
    return value[value.rfind(",") + 1 :].strip()[:MAX_IDENTITY_CHARS]


def parse_client_identity(setting: str) -> ClientIdentity | None:
    """The ``client_identity`` setting as a ``ClientIdentity``, None for ``off``; ValueError
    (saying what is expected) for anything else. Case and spaces around the parts do not
    matter: ``Header: X-Forwarded-For`` is ``header:x-forwarded-for``."""
    text = setting.strip().lower()
    if text == "off":
        return None
    if text == "peer":
        return ClientIdentity()
    if not text.startswith(_HEADER_PREFIX):
        raise ValueError(f"{_EXPECTED}, but got {setting!r}")
    name = text[len(_HEADER_PREFIX) :].strip()
    if not _FIELD_NAME.fullmatch(name):
        raise ValueError(f"{_EXPECTED}; {name!r} is not a header name")
    if name.endswith("-bin") or name.startswith("grpc-"):
        raise ValueError(
            f"{_EXPECTED}; {name!r} is a binary or reserved gRPC metadata key, not a header "
            "a proxy sets"
        )
    return ClientIdentity(name)


def canonical(identity: ClientIdentity | None) -> str:
    """The setting's value that ``parse_client_identity`` reads as ``identity``."""
    if identity is None:
        return "off"
    return "peer" if identity.header is None else f"{_HEADER_PREFIX}{identity.header}"
