"""The AUC monitor's mechanics: its e-values and detectors, its state bytes, retries and refusals.

Its statistical promise (the run length to a false alarm, the delay to a real drop) is measured
by ``bench/monitor_simulation.py``; these tests check the arithmetic it rests on.
"""

from __future__ import annotations

import math
import struct
import zlib

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from evalserve.core import InvalidInputError
from evalserve.core.binary._monitor import (
    BASELINE_RISK,
    EFFECTS,
    MonitorQuestion,
    monitor_window,
)
from evalserve.core.binary._monitor_format import MAGIC, MAX_RECENT, decode, encode

KNOWN = MonitorQuestion(baseline=0.85, baseline_variance=0.0, tolerance=0.01, arl=200.0)


def _mixture(zs: list[float]) -> float:
    """The detector by hand: per effect size, R = (R + 1) e; the average over effect sizes."""
    total = 0.0
    for lam in EFFECTS:
        r = 0.0
        for z in zs:
            r = (r + 1.0) * math.exp(-lam * z - lam * lam / 2)
        total += r
    return total / len(EFFECTS)


def _run(question: MonitorQuestion, aucs: list[float], variance: float) -> list[float]:
    state = None
    statistics = []
    for index, auc in enumerate(aucs):
        step = monitor_window(question, state, f"w{index}", auc, variance, "")
        state = step.state
        statistics.append(step.entry.statistic)
    return statistics


def test_the_statistic_is_the_mixture_of_shiryaev_roberts_detectors() -> None:
    aucs = [0.845, 0.83, 0.84, 0.82]
    variance = 0.01**2
    zs = [(auc - 0.84) / 0.01 for auc in aucs]
    statistics = _run(KNOWN, aucs, variance)
    for count, statistic in enumerate(statistics, start=1):
        assert statistic == pytest.approx(_mixture(zs[:count]), rel=1e-9)


def test_the_alarm_is_the_statistic_at_its_threshold() -> None:
    state = None
    for index in range(50):
        step = monitor_window(KNOWN, state, f"w{index}", 0.80, 0.01**2, "")
        state = step.state
        entry = step.entry
        assert entry.threshold == 200.0
        assert entry.alarm == (entry.statistic >= 200.0)
        if entry.alarm:
            break
    assert entry.alarm and index < 5, "a drop of four standard errors alarms within windows"


def test_a_drop_within_the_tolerance_is_never_evidence_however_large_the_window() -> None:
    # 0.002 below the baseline, tolerance 0.01, the standard error of a window of millions
    statistics = _run(KNOWN, [0.848] * 2000, 0.0005**2)
    # z = 16 every window: each detector settles at e / (1 - e) of its e-value, all tiny
    assert max(statistics) < 0.03 < KNOWN.threshold


def test_an_estimated_baseline_tests_its_lower_bound_with_a_raised_threshold() -> None:
    question = MonitorQuestion(0.85, 0.004**2, 0.01, 200.0)
    z = 2.3263478740408408  # the normal quantile at 1 - BASELINE_RISK
    assert BASELINE_RISK == 0.01
    assert question.bound == pytest.approx(0.85 - z * 0.004 - 0.01, abs=1e-9)
    assert question.threshold == pytest.approx(200.0 / 0.99)
    assert KNOWN.bound == pytest.approx(0.84) and KNOWN.threshold == 200.0


def test_a_window_sent_again_is_not_counted_again() -> None:
    first = monitor_window(KNOWN, None, "2026-11-27T10", 0.82, 1e-4, "")
    second = monitor_window(KNOWN, first.state, "2026-11-27T11", 0.82, 1e-4, "")
    # a retry with the old state gives the same answer, bit for bit
    again = monitor_window(KNOWN, first.state, "2026-11-27T11", 0.82, 1e-4, "")
    assert again == second
    # a retry with the new state changes nothing
    repeated = monitor_window(KNOWN, second.state, "2026-11-27T11", 0.82, 1e-4, "")
    assert repeated.state == second.state
    assert repeated.entry.statistic == second.entry.statistic
    assert repeated.entry.windows == 2 and "counted already" in (repeated.entry.reason or "")
    assert repeated.entry.evalue == second.entry.evalue  # the last window: its own e-value
    older = monitor_window(KNOWN, second.state, "2026-11-27T10", 0.82, 1e-4, "")
    assert older.state == second.state and older.entry.evalue is None


def test_windows_are_remembered_up_to_a_bound() -> None:
    state = None
    for index in range(MAX_RECENT + 5):
        state = monitor_window(KNOWN, state, f"w{index}", 0.85, 1e-4, "").state
    assert state is not None
    assert decode(state).recent == tuple(f"w{i}" for i in range(5, MAX_RECENT + 5))


def test_a_window_without_enough_rows_adds_no_evidence_and_says_so() -> None:
    first = monitor_window(KNOWN, None, "a", 0.80, 1e-4, "")
    short = monitor_window(KNOWN, first.state, "b", None, None, "the data has 3 positives")
    assert short.entry.status == "insufficient_data"
    assert short.entry.reason == "the data has 3 positives"
    assert short.entry.statistic == first.entry.statistic and short.entry.windows == 1
    assert short.entry.evalue is None
    retried = monitor_window(KNOWN, short.state, "b", None, None, "the data has 3 positives")
    assert retried.entry.evalue is None and retried.state == short.state


def test_the_state_reads_back_bit_for_bit() -> None:
    step = monitor_window(KNOWN, None, "w", 0.8312345678901234, 1.234567e-4, "")
    state = decode(step.state)
    assert encode(state) == step.state
    assert state.last_z == (0.8312345678901234 - 0.84) / math.sqrt(1.234567e-4)


@pytest.mark.parametrize(
    ("damage", "message"),
    [
        (lambda b: b"not a state", "wrong magic"),
        (lambda b: b[:-1] + bytes([b[-1] ^ 1]), "checksum"),
        (lambda b: b[:30] + b"\xff" + b[31:], "checksum"),
        (lambda b: b + b"x", "length"),
        (lambda b: b[:16] + struct.pack("<I", 99) + b[20:], "version 99"),
        (lambda b: b"\0" * 20_000, "over"),
    ],
)
def test_a_damaged_or_foreign_state_is_refused_naming_the_field(damage, message) -> None:  # type: ignore[no-untyped-def]
    good = monitor_window(KNOWN, None, "w", 0.83, 1e-4, "").state
    with pytest.raises(InvalidInputError, match=message) as refused:
        monitor_window(KNOWN, damage(good), "w2", 0.83, 1e-4, "")
    assert refused.value.field == "monitor_state"


def _forged(head: bytes) -> bytes:
    body = MAGIC + struct.pack("<II", 1, len(head)) + head
    return body + struct.pack("<I", zlib.crc32(body))


@pytest.mark.parametrize(
    "head",
    [
        b"[1, 2]",
        b'{"tolerance": 1}',
        b"\xff\xfe",
        b'{"tolerance":0.01,"arl":200,"threshold":200,"bound":0.84,"log_detectors":[],'
        b'"windows":0,"recent":[],"last_evalue":null,"last_z":null}',
        b'{"tolerance":0.01,"arl":200,"threshold":200,"bound":0.84,"log_detectors":[1e999],'
        b'"windows":0,"recent":[],"last_evalue":null,"last_z":null}',
        b'{"tolerance":0.01,"arl":200,"threshold":200,"bound":0.84,"log_detectors":[0],'
        b'"windows":-1,"recent":[],"last_evalue":null,"last_z":null}',
        b'{"tolerance":0.01,"arl":200,"threshold":200,"bound":0.84,"log_detectors":[0],'
        b'"windows":0,"recent":[3],"last_evalue":null,"last_z":null}',
        b'{"tolerance":0.01,"arl":200,"threshold":200,"bound":"x","log_detectors":[0],'
        b'"windows":0,"recent":[],"last_evalue":null,"last_z":null}',
        b'{"tolerance":0.01,"arl":200,"threshold":200,"bound":0.84,"log_detectors":[0],'
        b'"windows":0,"recent":[],"last_evalue":"x","last_z":null}',
    ],
)
def test_a_forged_head_with_a_valid_checksum_is_refused(head: bytes) -> None:
    with pytest.raises(InvalidInputError) as refused:
        decode(_forged(head))
    assert refused.value.field == "monitor_state"


@given(st.binary(max_size=300))
def test_no_bytes_crash_the_reader(data: bytes) -> None:
    try:
        decode(data)
    except InvalidInputError as error:
        assert error.field == "monitor_state"


def test_a_state_of_another_question_is_refused() -> None:
    state = monitor_window(KNOWN, None, "w", 0.83, 1e-4, "").state
    other = MonitorQuestion(0.85, 0.0, 0.02, 200.0)
    with pytest.raises(InvalidInputError, match="start a new monitor") as refused:
        monitor_window(other, state, "w2", 0.83, 1e-4, "")
    assert refused.value.field == "monitor_state"


def test_extreme_windows_stay_finite() -> None:
    state = None
    for auc, variance in ((1.0, 0.0), (0.0, 0.0), (0.3, 1e-12), (0.99, 1e-12)):
        step = monitor_window(KNOWN, state, None, auc, variance, "")
        state = step.state
        assert math.isfinite(step.entry.statistic)
        assert step.entry.evalue is not None and math.isfinite(step.entry.evalue)
    assert step.entry.alarm  # an AUC of 0.0 with no spread is past any threshold


def test_the_evalues_have_expectation_one_at_the_boundary() -> None:
    """E[exp(-lam z - lam^2 / 2)] = 1 for z ~ N(0, 1): the per-window e-values are fair at the
    null's worst case (the supermartingale the run-length guarantee stands on)."""
    rng = np.random.default_rng(0)
    z = rng.standard_normal(2_000_000)
    for lam in EFFECTS[:5]:  # the larger ones need far more draws to average
        mean = float(np.mean(np.exp(-lam * z - lam * lam / 2)))
        assert mean == pytest.approx(1.0, rel=0.05)
