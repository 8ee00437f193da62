"""End to end: the service and a real Prometheus, with the project's own config and rules.

``python -m evalserve.service`` runs on loopback; Prometheus (the Debian package ``prometheus``,
installed by ``make prometheus-tools``) runs on a free loopback port with its own TSDB in a temp
dir and a config generated from deploy/prometheus/prometheus.yml: the evalserve target replaced
by the service's address, scrape and evaluation intervals of 1 s, no Alertmanager, and the rule
path pointing at a test copy of deploy/prometheus/rules/evalserve.rules.yml whose ``for:``
durations (5 to 30 minutes in the real file) are shortened to 2 s (``for: 0m`` stays 0).
Nothing else of the rules changes.

Three models are evaluated over REST every half second, each request a new window with a
``baseline``, carrying the AUC monitor's ``monitor_state`` (base64 in JSON) from each answer to
the model's next request, as a monitoring job does: ``healthy`` (AUC about 0.9 against a
baseline payload of the same distribution); ``quiet`` (30 000 rows, AUC about 0.893 against a
baseline AUC of exactly 0.9: a drop within the monitor's default drift_tolerance of 0.01, yet
significant for the per-window drift test, p < 0.01 with z < 0, on which a per-window rule
would page); and ``drifted`` (AUC about 0.86 against a baseline payload of about 0.9: the monitor
alarms after a few windows of evidence). Through Prometheus's HTTP API the test checks that the
gauges arrive with the model's labels and the response's values, that the recording rules
aggregate them, that EvalserveModelAUCDegraded fires for ``drifted``, and that no alert at all
concerns ``healthy`` or ``quiet``. Then the service stops, as its pod would in a restart or a
rollout: its gauges go stale in Prometheus, while the recorded series keep the models' last
evaluation and monitor verdict, the degradation alert keeps firing and no staleness alert fires.
"""

from __future__ import annotations

import base64
import math
import os
import re
import shutil
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from statistics import NormalDist
from typing import Any

import httpx
import numpy as np
import pytest
import yaml

from evalserve.core.binary._monitor import EFFECTS
from evalserve.core.binary._monitor_format import decode as decode_state
from tests.service.ready import wait_ready

pytestmark = pytest.mark.slow

PROMETHEUS_DIR = Path(__file__).resolve().parents[2] / "deploy" / "prometheus"
SHORT_FOR = "2s"
DEADLINE_SECONDS = 60.0

HEALTHY = {"name": "healthy", "version": "1"}  # no segment: the label is empty, so absent
QUIET = {"name": "quiet", "version": "3"}
DRIFTED = {"name": "drifted", "version": "2024-06.1", "segment": "eu"}
MODELS = {"healthy": HEALTHY, "quiet": QUIET, "drifted": DRIFTED}
DEGRADED = "EvalserveModelAUCDegraded"


@dataclass
class Process:
    """A child process, the lines it wrote, and how to reach it."""

    process: subprocess.Popen[str]
    url: str
    lines: list[str] = field(default_factory=list)
    reader: threading.Thread | None = None

    def output(self) -> str:
        return "".join(self.lines[-60:])


def _stop(process: subprocess.Popen[str], reader: threading.Thread | None) -> None:
    """Terminate, wait, kill if it must; then let the reader reach the end of the output."""
    if process.poll() is None:
        process.terminate()
        try:
            process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=15)
    if reader is not None:
        reader.join(timeout=10)
    if process.stderr is not None and (reader is None or not reader.is_alive()):
        process.stderr.close()


def _drain(process: subprocess.Popen[str], lines: list[str]) -> threading.Thread:
    """Read the process's stderr into ``lines`` until it ends, so the pipe never fills."""
    assert process.stderr is not None
    stream = process.stderr
    reader = threading.Thread(target=lambda: lines.extend(stream), daemon=True)
    reader.start()
    return reader


@pytest.fixture
def service() -> Iterator[Process]:
    process = subprocess.Popen(
        [
            *(sys.executable, "-m", "evalserve.service"),
            *("--host", "127.0.0.1", "--rest-port", "0", "--grpc-port", "0"),
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )
    lines: list[str] = []
    reader = None
    try:
        ready = wait_ready(process, lines, timeout=60)
        if ready is None:
            pytest.fail(f"the service did not start:\n{''.join(lines)}")
        found, reader = ready
        host, port = found.group(1), found.group(2)
        yield Process(process, f"http://{host}:{port}", lines, reader)
    finally:
        _stop(process, reader)


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def _test_rules(path: Path) -> None:
    """The project's rules with every ``for:`` shortened (a zero one kept), nothing else
    changed."""
    text = (PROMETHEUS_DIR / "rules" / "evalserve.rules.yml").read_text(encoding="utf-8")
    durations = re.compile(r"(?m)^([ \t]+for:[ \t]*)(\S+)[ \t]*$")

    def shorten(found: re.Match[str]) -> str:
        zero = re.fullmatch(r"0+[smhdwy]?", found.group(2)) is not None
        return found.group(0) if zero else f"{found.group(1)}{SHORT_FOR}"

    shortened, count = durations.subn(shorten, text)
    assert count == len(re.findall(r"(?m)^\s+- alert:", text)), "every alert has a for:"
    path.write_text(shortened, encoding="utf-8")


def _test_config(path: Path, rules: Path, target: str) -> None:
    """deploy/prometheus/prometheus.yml with the evalserve target, 1 s intervals, the test rules,
    no Alertmanager and no other scrape job."""
    config = yaml.safe_load((PROMETHEUS_DIR / "prometheus.yml").read_text(encoding="utf-8"))
    config["global"].update(scrape_interval="1s", evaluation_interval="1s")
    config["rule_files"] = [str(rules)]
    config.pop("alerting", None)
    (job,) = [job for job in config["scrape_configs"] if job["job_name"] == "evalserve"]
    job["static_configs"] = [{"targets": [target]}]
    config["scrape_configs"] = [job]
    path.write_text(yaml.safe_dump(config), encoding="utf-8")


@pytest.fixture
def prometheus(service: Process, tmp_path: Path) -> Iterator[Process]:
    binary = shutil.which("prometheus")
    if binary is None:
        pytest.fail("prometheus is not installed: run `make prometheus-tools` (Debian: prometheus)")
    rules = tmp_path / "evalserve.rules.yml"
    config = tmp_path / "prometheus.yml"
    _test_rules(rules)
    _test_config(config, rules, service.url.removeprefix("http://"))
    for _attempt in range(3):  # the free port may be taken before Prometheus binds it
        port = _free_port()
        process = subprocess.Popen(
            [
                binary,
                f"--config.file={config}",
                f"--storage.tsdb.path={tmp_path / 'data'}",
                f"--web.listen-address=127.0.0.1:{port}",
            ],
            cwd=tmp_path,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
        )
        running = Process(process, f"http://127.0.0.1:{port}")
        running.reader = _drain(process, running.lines)
        try:
            deadline = time.monotonic() + 30
            while time.monotonic() < deadline and process.poll() is None:
                try:
                    if httpx.get(f"{running.url}/-/ready", timeout=2).status_code == 200:
                        yield running
                        return
                except httpx.TransportError:
                    pass
                time.sleep(0.2)
            if process.poll() is None:
                pytest.fail(f"Prometheus did not get ready:\n{running.output()}")
        finally:
            _stop(process, running.reader)
    pytest.fail(f"Prometheus did not start:\n{running.output()}")


def _rows(seed: int, auc: float, n: int = 4000, prevalence: float = 0.3) -> dict[str, Any]:
    """Binormal scores with the given AUC: negatives N(0, 1), positives N(d, 1),
    AUC = Phi(d / sqrt 2)."""
    rng = np.random.default_rng(seed)
    shift = math.sqrt(2) * NormalDist().inv_cdf(auc)
    labels = rng.random(n) < prevalence
    scores = rng.normal(size=n) + shift * labels
    return {"labels": labels.astype(int).tolist(), "scores": scores.round(6).tolist()}


def _request(model: dict[str, str], current: dict[str, Any], baseline: dict[str, Any]) -> Any:
    return {"task": "binary", **current, "baseline": baseline, "model": model}


@dataclass
class Monitored:
    """A model's requests as a monitoring job sends them: each one a new window, with the
    monitor's state from the previous answer; every answer kept."""

    body: dict[str, Any]
    state: str | None = None
    answers: list[dict[str, Any]] = field(default_factory=list)

    def next_request(self) -> dict[str, Any]:
        window = f"w{len(self.answers)}"
        return {**self.body, "monitor_state": self.state, "window": window}

    def answered(self, answer: dict[str, Any]) -> None:
        state = answer["monitor_state"]
        assert isinstance(state, str) and base64.b64decode(state, validate=True), answer
        self.state = state
        self.answers.append(answer)

    @property
    def last(self) -> dict[str, Any]:
        return self.answers[-1]

    def monitor_values(self, field_name: str) -> list[float]:
        """The monitor's ``field_name`` in every answer (a gauge scraped between two requests
        holds one of them)."""
        return [float(answer["monitor"]["roc_auc"][field_name]) for answer in self.answers]


def _query(prometheus: Process, expr: str) -> list[dict[str, Any]]:
    reply = httpx.get(f"{prometheus.url}/api/v1/query", params={"query": expr}, timeout=10)
    assert reply.status_code == 200, reply.text
    body = reply.json()
    assert body["status"] == "success", body
    result: list[dict[str, Any]] = body["data"]["result"]
    return result


def _alerts(prometheus: Process) -> list[dict[str, Any]]:
    reply = httpx.get(f"{prometheus.url}/api/v1/alerts", timeout=10)
    assert reply.status_code == 200, reply.text
    alerts: list[dict[str, Any]] = reply.json()["data"]["alerts"]
    return alerts


def _labels(model: dict[str, str]) -> dict[str, str]:
    """The model's labels as Prometheus stores them (an empty label value is no label)."""
    names = {"name": "model", "version": "version", "segment": "segment"}
    return {names[key]: value for key, value in model.items() if value}


def _selector(model: dict[str, str]) -> str:
    return ",".join(f'{key}="{value}"' for key, value in _labels(model).items())


def test_gauges_reach_prometheus_and_the_degradation_alert_fires_for_the_drifted_model_only(
    service: Process, prometheus: Process
) -> None:
    exact = {"roc_auc": 0.9, "roc_auc_variance": 0.0}  # a baseline AUC known exactly
    jobs = {
        "healthy": Monitored(_request(HEALTHY, _rows(1, 0.9), _rows(3, 0.9))),
        "quiet": Monitored(_request(QUIET, _rows(7, 0.8925, n=30000, prevalence=0.5), exact)),
        "drifted": Monitored(_request(DRIFTED, _rows(2, 0.86), _rows(4, 0.9))),
    }
    seen_quiet_alerts: list[dict[str, Any]] = []

    def evaluate_all() -> None:
        for job in jobs.values():
            reply = httpx.post(f"{service.url}/v1/evaluate", json=job.next_request(), timeout=30)
            assert reply.status_code == 200, reply.text
            job.answered(reply.json())

    def wait_for(what: str, ready: Callable[[], bool]) -> None:
        deadline = time.monotonic() + DEADLINE_SECONDS
        while time.monotonic() < deadline:
            evaluate_all()  # windows keep coming, as from a monitoring job
            seen_quiet_alerts.extend(
                alert
                for alert in _alerts(prometheus)
                if alert["labels"].get("model") in ("healthy", "quiet")
            )
            if ready():
                return
            time.sleep(0.5)
        pytest.fail(
            f"timed out waiting for {what}\nalerts: {_alerts(prometheus)}\n"
            f"targets: {httpx.get(f'{prometheus.url}/api/v1/targets', timeout=10).text}\n"
            f"prometheus:\n{prometheus.output()}\nservice:\n{service.output()}"
        )

    evaluate_all()
    # The test data says what it should. healthy: no drift. quiet: a drop the per-window drift
    # test calls significant (p < 0.01, z < 0: a per-window rule would page) but within the
    # monitor's tolerance. drifted: a real drop, significant by far.
    healthy_drift = jobs["healthy"].last["drift"]["roc_auc"]
    quiet_drift = jobs["quiet"].last["drift"]["roc_auc"]
    drifted_drift = jobs["drifted"].last["drift"]["roc_auc"]
    assert healthy_drift["status"] == "ok" and healthy_drift["p_value"] > 0.2, healthy_drift
    assert quiet_drift["p_value"] < 0.01 and quiet_drift["z"] < 0, quiet_drift
    assert 0.89 < jobs["quiet"].last["metrics"]["roc_auc"] < 0.9
    assert drifted_drift["significant"] and drifted_drift["z"] < -4, drifted_drift
    for job in jobs.values():
        assert job.last["monitor"]["roc_auc"]["windows"] == 1

    # 1. The gauges arrive, with the model's labels and the response's values.
    def arrived() -> bool:
        raw = _query(prometheus, 'evalserve_model_metric{metric="roc_auc"}')
        monitor = _query(prometheus, "evalserve:model_roc_auc_monitor_alarm:max")
        return len(raw) == 3 and len(monitor) == 3

    wait_for("the AUC and monitor gauges and their recording rules", arrived)
    target = service.url.removeprefix("http://")
    for name, model in MODELS.items():
        answer, selector = jobs[name].last, _selector(model)
        (auc,) = _query(prometheus, f'evalserve_model_metric{{metric="roc_auc",{selector}}}')
        assert auc["metric"] == {
            "__name__": "evalserve_model_metric",
            "job": "evalserve",
            "instance": target,
            "metric": "roc_auc",
            **_labels(model),
        }
        # every window of a model has the same rows: the same AUC, interval and drift test
        assert float(auc["value"][1]) == pytest.approx(answer["metrics"]["roc_auc"], rel=1e-12)
        interval = answer["intervals"]["roc_auc"]
        for gauge, expected in (
            ("evalserve_model_metric_ci_lower", interval["lower"]),
            ("evalserve_model_metric_ci_upper", interval["upper"]),
            ("evalserve_model_drift_z", answer["drift"]["roc_auc"]["z"]),
            ("evalserve_model_drift_p_value", answer["drift"]["roc_auc"]["p_value"]),
            ("evalserve_model_drift_significant", float(answer["drift"]["roc_auc"]["significant"])),
            ("evalserve_model_drift_insufficient_data", 0.0),
            ("evalserve_model_monitor_threshold", answer["monitor"]["roc_auc"]["threshold"]),
        ):
            (sample,) = _query(prometheus, f'{gauge}{{metric="roc_auc",{selector}}}')
            assert float(sample["value"][1]) == pytest.approx(expected, rel=1e-12), gauge
        # the monitor's statistic and alarm move from window to window: the gauge holds the
        # verdict of one of the windows answered so far
        for gauge, field_name in (
            ("evalserve_model_monitor_statistic", "statistic"),
            ("evalserve_model_monitor_alarm", "alarm"),
        ):
            (sample,) = _query(prometheus, f'{gauge}{{metric="roc_auc",{selector}}}')
            value = float(sample["value"][1])
            assert any(
                value == pytest.approx(seen, rel=1e-12)
                for seen in jobs[name].monitor_values(field_name)
            ), (gauge, value)
        n_rows = len(jobs[name].body["labels"])
        (count,) = _query(prometheus, f'evalserve_model_metric{{metric="n_samples",{selector}}}')
        assert float(count["value"][1]) == n_rows
        (stamp,) = _query(
            prometheus, f"evalserve_model_last_evaluation_timestamp_seconds{{{selector}}}"
        )
        assert abs(float(stamp["value"][1]) - time.time()) < 30

        # 2. The recording rules: one series per model, without the replica's labels.
        (recorded,) = _query(prometheus, f"evalserve:model_roc_auc:max{{{selector}}}")
        assert recorded["metric"] == {"__name__": "evalserve:model_roc_auc:max", **_labels(model)}
        assert float(recorded["value"][1]) == pytest.approx(answer["metrics"]["roc_auc"])
        (floor,) = _query(prometheus, f"evalserve:model_auc_floor{{{selector}}}")
        assert float(floor["value"][1]) == 0.7
        (threshold,) = _query(
            prometheus, f"evalserve:model_roc_auc_monitor_threshold:max{{{selector}}}"
        )
        assert threshold["metric"] == {
            "__name__": "evalserve:model_roc_auc_monitor_threshold:max",
            **_labels(model),
        }

    # 3. The degradation alert fires for the drifted model once the monitor's evidence over
    # its windows reaches the threshold (for: 0m: firing, not pending, from the first rule
    # evaluation that sees the alarm), and no alert concerns the healthy or the quiet model.
    def degraded_alerts() -> list[dict[str, Any]]:
        return [a for a in _alerts(prometheus) if a["labels"]["alertname"] == DEGRADED]

    wait_for(
        f"{DEGRADED} to fire",
        lambda: any(alert["state"] == "firing" for alert in degraded_alerts()),
    )
    alerts = _alerts(prometheus)
    assert seen_quiet_alerts == [], seen_quiet_alerts
    assert [a for a in alerts if a["labels"].get("model") in ("healthy", "quiet")] == [], alerts
    (alert,) = degraded_alerts()
    assert alert["labels"] == {"alertname": DEGRADED, "severity": "warning", **_labels(DRIFTED)}
    drifted = jobs["drifted"]
    first_alarm = drifted.monitor_values("alarm").index(1.0)
    assert drifted.answers[first_alarm]["monitor"]["roc_auc"]["windows"] == first_alarm + 1
    threshold_value = drifted.last["monitor"]["roc_auc"]["threshold"]
    assert float(alert["value"]) >= threshold_value  # the statistic
    description = alert["annotations"]["description"]
    assert 'Model drifted, version "2024-06.1", segment "eu"' in description, description
    assert f"reached its threshold {threshold_value:.0f}" in description, description
    assert f"The newest window's AUC is {drifted.last['metrics']['roc_auc']:.3f}" in description
    assert alert["annotations"]["documentation"].startswith("docs/monitoring.md#")
    # every answer counted one more window: the state went round from each answer to the next
    for job in jobs.values():
        assert [a["monitor"]["roc_auc"]["windows"] for a in job.answers] == list(
            range(1, len(job.answers) + 1)
        )
    # the quiet model: significant at every window, never an alarm
    quiet = jobs["quiet"]
    assert all(answer["drift"]["roc_auc"]["p_value"] < 0.01 for answer in quiet.answers)
    assert quiet.monitor_values("alarm") == [0.0] * len(quiet.answers)
    # the same rows in every window: the same z and e-values each time, so the statistic climbs
    # towards the Shiryaev-Roberts fixed point, the mean over the effect sizes of e / (1 - e)
    # (about 1.06 here), over a thousand times below the threshold, however many windows
    z = decode_state(base64.b64decode(quiet.state or "")).last_z
    assert z is not None and z > 0
    evalues = [math.exp(-lam * z - lam**2 / 2) for lam in EFFECTS]
    fixed_point = sum(e / (1 - e) for e in evalues) / len(evalues)
    statistics = quiet.monitor_values("statistic")
    assert statistics == sorted(statistics)
    assert statistics[-1] <= fixed_point * (1 + 1e-9)  # reached only in the limit
    assert fixed_point < quiet.last["monitor"]["roc_auc"]["threshold"] / 1000

    # 4. The service goes away, as its pod does in a restart or a rollout: Prometheus marks its
    # gauges stale at the failed scrape. The recorded series, without the replica's labels,
    # keep each model's last evaluation and monitor verdict; the degradation alert keeps
    # firing; nothing is stale.
    _stop(service.process, service.reader)
    deadline = time.monotonic() + DEADLINE_SECONDS
    while _query(prometheus, "evalserve_model_last_evaluation_timestamp_seconds"):
        if time.monotonic() > deadline:
            pytest.fail(f"the gauges did not go stale\nprometheus:\n{prometheus.output()}")
        time.sleep(0.5)
    time.sleep(3)  # a few rule evaluations (1 s) with no replica exporting the models
    assert _query(prometheus, 'evalserve_model_metric{metric="roc_auc"}') == []
    assert _query(prometheus, "evalserve_model_monitor_alarm") == []
    for name, model in MODELS.items():
        selector = _selector(model)
        (recorded,) = _query(prometheus, f"evalserve:model_roc_auc:max{{{selector}}}")
        assert float(recorded["value"][1]) == pytest.approx(jobs[name].last["metrics"]["roc_auc"])
        (count,) = _query(
            prometheus, f'evalserve:model_metric:last_over_7d{{metric="n_samples",{selector}}}'
        )
        assert count["metric"] == {
            "__name__": "evalserve:model_metric:last_over_7d",
            "metric": "n_samples",
            **_labels(model),
        }
        assert float(count["value"][1]) == len(jobs[name].body["labels"])
        (alarm,) = _query(prometheus, f"evalserve:model_roc_auc_monitor_alarm:max{{{selector}}}")
        assert float(alarm["value"][1]) == jobs[name].last["monitor"]["roc_auc"]["alarm"]
        (age,) = _query(prometheus, f"evalserve:model_evaluation_age_seconds{{{selector}}}")
        assert 0 < float(age["value"][1]) < DEADLINE_SECONDS
    alerts = _alerts(prometheus)
    assert [a["state"] for a in degraded_alerts()] == ["firing"], alerts
    assert [a for a in alerts if a["labels"].get("model") in ("healthy", "quiet")] == [], alerts
    assert [a for a in alerts if "Stale" in a["labels"]["alertname"]] == [], alerts
