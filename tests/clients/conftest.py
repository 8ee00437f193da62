"""The contract tests' session services (a real server on loopback, both doors), reused."""

from tests.contract.conftest import limited, service

__all__ = ["limited", "service"]
