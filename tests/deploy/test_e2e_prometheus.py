"""End to end: the service and a real Prometheus, with the project's own config and rules.

``python -m evalserve.service`` runs on loopback; Prometheus (the Debian package ``prometheus``,
installed by ``make prometheus-tools``) runs on a free loopback port with its own TSDB in a temp
dir and a config generated from deploy/prometheus/prometheus.yml: the evalserve target replaced
by the service's address, scrape and evaluation intervals of 1 s, no Alertmanager, and the rule
path pointing at a test copy of deploy/prometheus/rules/evalserve.rules.yml whose ``for:``
durations (5 to 30 minutes in the real file) are shortened to 2 s. Nothing else of the rules
changes.

Two models are evaluated over REST every half second: ``healthy`` (AUC about 0.9 against a
baseline payload of the same distribution) and ``drifted`` (AUC about 0.7 against a baseline of
about 0.9, 4000 rows each, so the drop is significant by far). Through Prometheus's HTTP API the
test checks that the gauges arrive with the model's labels and the response's values, that the
recording rules aggregate them, that EvalserveModelAUCDrift fires for ``drifted``, and that no
alert at all concerns ``healthy``. Then the service stops, as its pod would in a restart or a
rollout: its gauges go stale in Prometheus, while the recorded series keep both models' last
evaluation, the drift alert keeps firing and no staleness alert fires.
"""

from __future__ import annotations

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

pytestmark = pytest.mark.slow

PROMETHEUS_DIR = Path(__file__).resolve().parents[2] / "deploy" / "prometheus"
READY_LINE = re.compile(r"REST on http://([\d.]+):(\d+), gRPC on ([\d.]+):(\d+)")
SHORT_FOR = "2s"
DEADLINE_SECONDS = 60.0

HEALTHY = {"name": "healthy", "version": "1"}  # no segment: the label is empty, so absent
DRIFTED = {"name": "drifted", "version": "2024-06.1", "segment": "eu"}


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
    assert process.stderr is not None
    lines: list[str] = []
    reader = None
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            line = process.stderr.readline()
            if not line:
                break
            lines.append(line)
            found = READY_LINE.search(line)
            if found:
                reader = _drain(process, lines)
                host, port = found.group(1), found.group(2)
                yield Process(process, f"http://{host}:{port}", lines, reader)
                return
        pytest.fail(f"the service did not start:\n{''.join(lines)}")
    finally:
        _stop(process, reader)


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def _test_rules(path: Path) -> None:
    """The project's rules with every ``for:`` shortened, nothing else changed."""
    text = (PROMETHEUS_DIR / "rules" / "evalserve.rules.yml").read_text(encoding="utf-8")
    shortened, count = re.subn(r"(?m)^([ \t]+for:[ \t]*)\S+[ \t]*$", rf"\g<1>{SHORT_FOR}", text)
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


def test_gauges_reach_prometheus_and_the_drift_alert_fires_for_the_drifted_model_only(
    service: Process, prometheus: Process
) -> None:
    requests = {
        "healthy": _request(HEALTHY, _rows(1, 0.9), _rows(3, 0.9)),
        "drifted": _request(DRIFTED, _rows(2, 0.7), _rows(4, 0.9)),
    }
    answers: dict[str, Any] = {}
    seen_healthy_alerts: list[dict[str, Any]] = []

    def evaluate_all() -> None:
        for name, body in requests.items():
            reply = httpx.post(f"{service.url}/v1/evaluate", json=body, timeout=30)
            assert reply.status_code == 200, reply.text
            answers[name] = reply.json()

    def wait_for(what: str, ready: Callable[[], bool]) -> None:
        deadline = time.monotonic() + DEADLINE_SECONDS
        while time.monotonic() < deadline:
            evaluate_all()  # evaluations keep coming, as from a monitoring job
            seen_healthy_alerts.extend(
                alert for alert in _alerts(prometheus) if alert["labels"].get("model") == "healthy"
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
    # The test data says what it should: the healthy model's drift is not significant, the
    # drifted model's is, by far.
    healthy_drift = answers["healthy"]["drift"]["roc_auc"]
    drifted_drift = answers["drifted"]["drift"]["roc_auc"]
    assert healthy_drift["status"] == "ok" and healthy_drift["p_value"] > 0.2, healthy_drift
    assert drifted_drift["significant"] and drifted_drift["z"] < -10, drifted_drift

    # 1. The gauges arrive, with the model's labels and the response's values.
    def arrived() -> bool:
        raw = _query(prometheus, 'evalserve_model_metric{metric="roc_auc"}')
        return len(raw) == 2 and len(_query(prometheus, "evalserve:model_roc_auc:max")) == 2

    wait_for("the AUC gauges and their recording rules", arrived)
    target = service.url.removeprefix("http://")
    for name, model in (("healthy", HEALTHY), ("drifted", DRIFTED)):
        answer = answers[name]
        selector = ",".join(f'{key}="{value}"' for key, value in _labels(model).items())
        (auc,) = _query(prometheus, f'evalserve_model_metric{{metric="roc_auc",{selector}}}')
        assert auc["metric"] == {
            "__name__": "evalserve_model_metric",
            "job": "evalserve",
            "instance": target,
            "metric": "roc_auc",
            **_labels(model),
        }
        assert float(auc["value"][1]) == pytest.approx(answer["metrics"]["roc_auc"], rel=1e-12)
        interval = answer["intervals"]["roc_auc"]
        for gauge, expected in (
            ("evalserve_model_metric_ci_lower", interval["lower"]),
            ("evalserve_model_metric_ci_upper", interval["upper"]),
            ("evalserve_model_drift_z", answer["drift"]["roc_auc"]["z"]),
            ("evalserve_model_drift_p_value", answer["drift"]["roc_auc"]["p_value"]),
            ("evalserve_model_drift_significant", float(answer["drift"]["roc_auc"]["significant"])),
            ("evalserve_model_drift_insufficient_data", 0.0),
        ):
            (sample,) = _query(prometheus, f'{gauge}{{metric="roc_auc",{selector}}}')
            assert float(sample["value"][1]) == pytest.approx(expected, rel=1e-12), gauge
        (count,) = _query(prometheus, f'evalserve_model_metric{{metric="n_samples",{selector}}}')
        assert float(count["value"][1]) == 4000
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

    # 3. The drift alert fires for the drifted model (pending first, then firing after its
    # shortened for:), and no alert concerns the healthy model.
    def drift_alerts() -> list[dict[str, Any]]:
        return [
            a for a in _alerts(prometheus) if a["labels"]["alertname"] == "EvalserveModelAUCDrift"
        ]

    wait_for(
        "EvalserveModelAUCDrift to fire",
        lambda: any(alert["state"] == "firing" for alert in drift_alerts()),
    )
    alerts = _alerts(prometheus)
    assert seen_healthy_alerts == [], seen_healthy_alerts
    assert [a for a in alerts if a["labels"].get("model") == "healthy"] == [], alerts
    (alert,) = drift_alerts()
    assert alert["labels"] == {
        "alertname": "EvalserveModelAUCDrift",
        "severity": "warning",
        **_labels(DRIFTED),
    }
    assert float(alert["value"]) < 0.01  # the p-value
    description = alert["annotations"]["description"]
    assert 'Model drifted, version "2024-06.1", segment "eu"' in description, description
    assert f"current AUC {answers['drifted']['metrics']['roc_auc']:.3f}" in description

    # 4. The service goes away, as its pod does in a restart or a rollout: Prometheus marks its
    # gauges stale at the failed scrape. The recorded series, without the replica's labels,
    # keep each model's last evaluation; the drift alert keeps firing; nothing is stale.
    _stop(service.process, service.reader)
    deadline = time.monotonic() + DEADLINE_SECONDS
    while _query(prometheus, "evalserve_model_last_evaluation_timestamp_seconds"):
        if time.monotonic() > deadline:
            pytest.fail(f"the gauges did not go stale\nprometheus:\n{prometheus.output()}")
        time.sleep(0.5)
    time.sleep(3)  # a few rule evaluations (1 s) with no replica exporting the models
    assert _query(prometheus, 'evalserve_model_metric{metric="roc_auc"}') == []
    for name, model in (("healthy", HEALTHY), ("drifted", DRIFTED)):
        selector = ",".join(f'{key}="{value}"' for key, value in _labels(model).items())
        (recorded,) = _query(prometheus, f"evalserve:model_roc_auc:max{{{selector}}}")
        assert float(recorded["value"][1]) == pytest.approx(answers[name]["metrics"]["roc_auc"])
        (count,) = _query(
            prometheus, f'evalserve:model_metric:last_over_7d{{metric="n_samples",{selector}}}'
        )
        assert count["metric"] == {
            "__name__": "evalserve:model_metric:last_over_7d",
            "metric": "n_samples",
            **_labels(model),
        }
        assert float(count["value"][1]) == 4000
        (age,) = _query(prometheus, f"evalserve:model_evaluation_age_seconds{{{selector}}}")
        assert 0 < float(age["value"][1]) < DEADLINE_SECONDS
    alerts = _alerts(prometheus)
    assert [a["state"] for a in drift_alerts()] == ["firing"], alerts
    assert [a for a in alerts if a["labels"].get("model") == "healthy"] == [], alerts
    assert [a for a in alerts if "Stale" in a["labels"]["alertname"]] == [], alerts
