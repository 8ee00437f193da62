"""Settings for the whole suite.

Hypothesis' default deadline (200 ms per example) is a timing assertion, and the suite runs in
parallel beside servers, Node and Prometheus on whatever machine CI gives it: an example that
waits for a CPU would fail a correctness test for being slow. Speed is measured by the scripts
in bench/, not by the tests, so the deadline is off.
"""

from hypothesis import settings

settings.register_profile("evalserve", deadline=None)
settings.load_profile("evalserve")
