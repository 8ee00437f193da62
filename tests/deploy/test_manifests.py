"""deploy/: the Dockerfile, the compose file, the Grafana dashboard and the Kubernetes manifests.

Docker, Grafana and a cluster do not run here, so everything is checked offline: the Dockerfile
by parsing it (and running its HEALTHCHECK command against a loopback server), the compose file
and the dashboard by structure, the core Kubernetes kinds against the API's JSON schemas
(kubernetes-validate, strict: unknown fields are errors), the operator's kinds (ServiceMonitor,
PrometheusRule) by structure, and the dashboard's PromQL with promtool. Files that tie together
(ports, labels, selectors, the image's user, the shutdown grace, the settings' names) are checked
against each other and against ``service.config.Settings``.
"""

from __future__ import annotations

import http.server
import importlib.util
import json
import re
import shutil
import socket
import ssl
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import kubernetes_validate
import pytest
import trustme
import yaml
from kubernetes_validate.utils import all_versions
from packaging.version import Version

from evalserve.service.config import Settings
from evalserve.service.grpc_drain import GOAWAY_SECONDS
from evalserve.service.rest_server import ACCEPT_PENDING_SECONDS, IDLE_QUIET_SECONDS
from evalserve.service.server import CUT_OFF_MARGIN
from tests.docs.pages import metrics_contract

ROOT = Path(__file__).resolve().parents[2]
DEPLOY = ROOT / "deploy"
DOCKERFILE = DEPLOY / "Dockerfile"
DOCKERIGNORE = DEPLOY / "Dockerfile.dockerignore"
COMPOSE = DEPLOY / "compose.yaml"
GRAFANA = DEPLOY / "grafana"
DASHBOARD = GRAFANA / "dashboards" / "evalserve.json"
K8S = DEPLOY / "k8s"
RULES = DEPLOY / "prometheus" / "rules" / "evalserve.rules.yml"
PROMETHEUS_YML = DEPLOY / "prometheus" / "prometheus.yml"

REST_PORT = Settings.model_fields["rest_port"].default
GRPC_PORT = Settings.model_fields["grpc_port"].default
SHUTDOWN_GRACE = Settings.model_fields["shutdown_grace_seconds"].default
# What a drain may take past the grace: the cut-off answers leaving, the REST server accepting
# what the kernel queued, the quiet before the servers close, gRPC's GOAWAY.
DRAIN_TAIL = CUT_OFF_MARGIN + ACCEPT_PENDING_SECONDS + IDLE_QUIET_SECONDS + GOAWAY_SECONDS

# The oldest Kubernetes these manifests target (native gRPC probes are GA in 1.27; or the oldest
# schemas kubernetes-validate still ships) and the newest it ships.
_SHIPPED = all_versions()
K8S_VERSIONS = [
    next(v for v in _SHIPPED if Version(v) >= Version("1.27")),
    _SHIPPED[-1],
]
OPERATOR_KINDS = {"ServiceMonitor", "PrometheusRule"}


# ---------------------------------------------------------------------------------- helpers


def _settings_env(name: str) -> bool:
    """Whether ``name`` is the environment variable of a real setting."""
    prefix = "EVALSERVE_"
    return name.startswith(prefix) and name[len(prefix) :].lower() in Settings.model_fields


def _dockerfile() -> list[tuple[str, str]]:
    """(INSTRUCTION, arguments) in order: continuations joined, comments dropped."""
    instructions: list[tuple[str, str]] = []
    pending = ""
    for raw in DOCKERFILE.read_text(encoding="utf-8").splitlines():
        line = raw.strip()
        if not line or line.startswith("#"):
            continue  # comments are ignored inside continuations too
        if line.endswith("\\"):
            pending += line[:-1] + " "
            continue
        line = pending + line
        pending = ""
        keyword, _, arguments = line.partition(" ")
        instructions.append((keyword.upper(), arguments.strip()))
    assert not pending, "the Dockerfile ends inside a line continuation"
    return instructions


def _stages() -> list[tuple[str, str, list[tuple[str, str]]]]:
    """(base image with global ARG defaults substituted, stage name, instructions) per stage."""
    args: dict[str, str] = {}
    stages: list[tuple[str, str, list[tuple[str, str]]]] = []
    for keyword, arguments in _dockerfile():
        if keyword == "FROM":
            match = re.fullmatch(r"(\S+)(?:\s+AS\s+(\S+))?", arguments, flags=re.IGNORECASE)
            assert match, arguments
            image = re.sub(r"\$\{(\w+)\}|\$(\w+)", lambda m: args[m[1] or m[2]], match[1])
            stages.append((image, match[2] or "", []))
        elif not stages:
            assert keyword == "ARG", f"{keyword} before the first FROM"
            name, _, default = arguments.partition("=")
            args[name] = default
        else:
            stages[-1][2].append((keyword, arguments))
    return stages


def _instructions(stage: list[tuple[str, str]], keyword: str) -> list[str]:
    return [arguments for kw, arguments in stage if kw == keyword]


def _env(stage: list[tuple[str, str]]) -> dict[str, str]:
    env: dict[str, str] = {}
    for arguments in _instructions(stage, "ENV"):
        for name, quoted, plain in re.findall(r'(\w+)=(?:"([^"]*)"|(\S+))', arguments):
            env[name] = quoted or plain
    return env


def _healthcheck_command() -> list[str]:
    (healthcheck,) = _instructions(_stages()[-1][2], "HEALTHCHECK")
    command = healthcheck.split(" CMD ", 1)[1].strip()
    argv = json.loads(command)  # exec form: a JSON array, no shell
    assert isinstance(argv, list)
    return [str(part) for part in argv]


def _yaml(path: Path) -> Any:
    return yaml.safe_load(path.read_text(encoding="utf-8"))


def _compose() -> dict[str, Any]:
    compose = _yaml(COMPOSE)
    assert isinstance(compose, dict)
    return compose


def _dashboard() -> dict[str, Any]:
    dashboard = json.loads(DASHBOARD.read_text(encoding="utf-8"))
    assert isinstance(dashboard, dict)
    return dashboard


def _query_panels() -> list[dict[str, Any]]:
    panels = _dashboard()["panels"]
    return [panel for panel in panels if panel["type"] != "row"]


def _exprs() -> list[str]:
    return [target["expr"] for panel in _query_panels() for target in panel["targets"]]


def _manifest_files() -> list[Path]:
    return sorted(path for path in K8S.glob("*.yaml") if path.name != "kustomization.yaml")


def _objects() -> list[dict[str, Any]]:
    return [
        document
        for path in _manifest_files()
        for document in yaml.safe_load_all(path.read_text(encoding="utf-8"))
        if document
    ]


def _object(kind: str) -> dict[str, Any]:
    (found,) = [obj for obj in _objects() if obj["kind"] == kind]
    return found


def _container() -> dict[str, Any]:
    (container,) = _object("Deployment")["spec"]["template"]["spec"]["containers"]
    assert isinstance(container, dict)
    return container


def _generator() -> ModuleType:
    spec = importlib.util.spec_from_file_location("evalserve_k8s_generate", K8S / "generate.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _contract_metrics() -> set[str]:
    """Metric names of the metrics contract (histograms with their _bucket/_sum/_count)."""
    names = set()
    for name, kind in metrics_contract().items():
        names.add(name)
        if kind == "histogram":
            names |= {f"{name}_bucket", f"{name}_sum", f"{name}_count"}
    return names


# ---------------------------------------------------------------------------------- Dockerfile


def test_dockerfile_builds_a_wheel_then_copies_it_into_a_slim_runtime() -> None:
    stages = _stages()
    assert len(stages) >= 2, "multi-stage: a builder and a runtime"
    (builder_image, builder, builder_steps), (runtime_image, _, runtime_steps) = (
        stages[0],
        stages[-1],
    )
    assert builder == "builder"
    assert builder_image == runtime_image == "python:3.11-slim"
    assert any("pip wheel" in run for run in _instructions(builder_steps, "RUN"))
    assert any(copy.startswith("--from=builder ") for copy in _instructions(runtime_steps, "COPY"))
    # The virtualenv has no pip of its own; the runtime installs nothing with pip (the builder's
    # virtualenv is copied whole) and removes the base image's pip (tests/deploy/test_image.py
    # checks the built image).
    assert any("venv --without-pip" in run for run in _instructions(builder_steps, "RUN"))
    runs = _instructions(runtime_steps, "RUN")
    assert not any(re.search(r"pip\s+(install|wheel|download)", run) for run in runs)
    assert any("pip uninstall" in run for run in runs)


def test_dockerfile_builder_copies_everything_the_wheel_is_built_from() -> None:
    """Every folder the wheel is built from (the package folder of pyproject.toml and the
    top-level folders its links point into), the readme and the license reach the build context
    and the builder stage, so a new top-level folder cannot be forgotten in the image."""
    import tomllib

    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    needed = {"pyproject.toml", project["project"]["readme"], *project["project"]["license-files"]}
    for where in project["tool"]["setuptools"]["packages"]["find"]["where"]:
        needed.add(where.split("/")[0])
        for path in (ROOT / where).rglob("*"):
            if path.is_symlink():
                needed.add(path.resolve().relative_to(ROOT).parts[0])
    copied = set()
    for copy in _instructions(_stages()[0][2], "COPY"):
        copied |= {source.rstrip("/") for source in copy.split()[:-1]}
    assert needed <= copied
    ignore = DOCKERIGNORE.read_text(encoding="utf-8").splitlines()
    assert "*" in ignore, "the build context is an allow-list"
    assert {line[1:] for line in ignore if line.startswith("!")} >= needed


def test_dockerfile_runs_as_a_numeric_non_root_user_that_the_pod_spec_matches() -> None:
    runtime = _stages()[-1][2]
    user = _instructions(runtime, "USER")[-1]
    uid, _, gid = user.partition(":")
    # Numeric, so that Kubernetes' runAsNonRoot can check it without the image's /etc/passwd.
    assert uid.isdigit() and int(uid) != 0
    assert gid.isdigit() and int(gid) != 0
    pod = _object("Deployment")["spec"]["template"]["spec"]["securityContext"]
    assert (pod["runAsUser"], pod["runAsGroup"]) == (int(uid), int(gid))


def test_dockerfile_entrypoint_is_exec_form_evalserve_serve() -> None:
    import tomllib

    (entrypoint,) = _instructions(_stages()[-1][2], "ENTRYPOINT")
    assert json.loads(entrypoint) == ["evalserve", "serve"]  # exec form: SIGTERM reaches it
    scripts = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"][
        "scripts"
    ]
    # run() may restart the command by exec (evalserve.cpu_dispatch): the same process, so the
    # entrypoint stays the process that SIGTERM reaches.
    assert scripts["evalserve"] == "evalserve.cli:run"
    assert not _instructions(_stages()[-1][2], "CMD")
    assert _instructions(_stages()[-1][2], "STOPSIGNAL") in ([], ["SIGTERM"])


def test_dockerfile_exposes_both_ports_and_listens_on_every_interface() -> None:
    runtime = _stages()[-1][2]
    exposed = {
        int(port.split("/")[0])
        for line in _instructions(runtime, "EXPOSE")
        for port in line.split()
    }
    assert exposed == {REST_PORT, GRPC_PORT}
    env = _env(runtime)
    assert env["EVALSERVE_HOST"] == "0.0.0.0"
    assert int(env["EVALSERVE_REST_PORT"]) == REST_PORT
    assert int(env["EVALSERVE_GRPC_PORT"]) == GRPC_PORT
    assert all(_settings_env(name) for name in env if name.startswith("EVALSERVE_"))


class _Health(http.server.BaseHTTPRequestHandler):
    status = 200

    def do_GET(self) -> None:
        self.send_response(self.status if self.path == "/healthz" else 404)
        self.send_header("content-length", "0")
        self.end_headers()

    def log_message(self, format: str, *args: object) -> None:
        pass


@pytest.fixture
def health_server() -> Iterator[http.server.HTTPServer]:
    server = http.server.HTTPServer(("127.0.0.1", 0), _Health)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()
        thread.join()


def _run_healthcheck(port: int, tls_cert: Path | None = None) -> int:
    argv = _healthcheck_command()
    assert argv[0] == "python"  # the runtime's virtualenv python; no curl in the slim image
    env = {"EVALSERVE_REST_PORT": str(port)}
    if tls_cert is not None:
        env["EVALSERVE_TLS_CERT_FILE"] = str(tls_cert)
    return subprocess.run(
        [sys.executable, *argv[1:]], env=env, capture_output=True, timeout=20
    ).returncode


def test_dockerfile_healthcheck_passes_on_200_and_fails_otherwise(
    health_server: http.server.HTTPServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    (healthcheck,) = _instructions(_stages()[-1][2], "HEALTHCHECK")
    assert re.search(r"--timeout=\d+s", healthcheck)
    port = health_server.server_address[1]
    assert _run_healthcheck(port) == 0
    monkeypatch.setattr(_Health, "status", 503)
    assert _run_healthcheck(port) != 0
    with socket.socket() as unused:  # a port nobody listens on: connection refused
        unused.bind(("127.0.0.1", 0))
        closed = unused.getsockname()[1]
    assert _run_healthcheck(closed) != 0


def test_dockerfile_healthcheck_speaks_https_when_the_service_does(
    health_server: http.server.HTTPServer, tmp_path: Path
) -> None:
    ca = trustme.CA()
    cert = ca.issue_cert("evalserve.internal")  # not 127.0.0.1: the probe does not verify
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    cert.configure_cert(context)
    secure = http.server.HTTPServer(("127.0.0.1", 0), _Health)
    secure.socket = context.wrap_socket(secure.socket, server_side=True)
    thread = threading.Thread(target=secure.serve_forever, daemon=True)
    thread.start()
    pem = tmp_path / "cert.pem"
    cert.cert_chain_pems[0].write_to_path(str(pem))
    try:
        assert _run_healthcheck(secure.server_address[1], tls_cert=pem) == 0
        assert _run_healthcheck(secure.server_address[1]) != 0  # plaintext to a TLS port
        assert _run_healthcheck(health_server.server_address[1], tls_cert=pem) != 0
    finally:
        secure.shutdown()
        secure.server_close()
        thread.join()


# ---------------------------------------------------------------------------------- compose


def test_compose_runs_the_service_with_prometheus_alertmanager_and_grafana() -> None:
    services = _compose()["services"]
    assert set(services) == {"evalserve", "prometheus", "alertmanager", "grafana"}
    for name, service in services.items():
        image = service.get("image", "")
        assert name == "evalserve" or re.fullmatch(r"[\w./-]+:v?\d+\.\d+\.\d+", image), (
            f"{name}: pin the image to a release ({image!r})"
        )
    ports = {(name, port) for name, service in services.items() for port in service["ports"]}
    assert ports == {
        ("evalserve", f"{REST_PORT}:{REST_PORT}"),
        ("evalserve", f"{GRPC_PORT}:{GRPC_PORT}"),
        ("prometheus", "9090:9090"),
        ("alertmanager", "9093:9093"),
        ("grafana", "3000:3000"),
    }


def test_compose_builds_the_image_and_drains_on_stop() -> None:
    service = _compose()["services"]["evalserve"]
    assert (COMPOSE.parent / service["build"]["context"]).resolve() == ROOT
    assert (ROOT / service["build"]["dockerfile"]).resolve() == DOCKERFILE
    env = service["environment"]
    assert env["EVALSERVE_HOST"] == "0.0.0.0"
    assert all(_settings_env(name) for name in env)
    grace = float(env.get("EVALSERVE_SHUTDOWN_GRACE_SECONDS", SHUTDOWN_GRACE))
    stop = re.fullmatch(r"(\d+)s", service["stop_grace_period"])
    assert stop and int(stop[1]) > grace + DRAIN_TAIL
    assert service["read_only"] is True and "/tmp" in service["tmpfs"]
    # Monitoring starts whatever the service's health: a failing service must still be seen.
    assert "evalserve" not in _compose()["services"]["prometheus"].get("depends_on", [])


def _mounts(service: str) -> dict[str, Path]:
    """Container path -> host path of a service's bind mounts."""
    mounts = {}
    for volume in _compose()["services"][service]["volumes"]:
        source, target = volume.split(":")[:2]
        if source.startswith("."):
            mounts[target] = (COMPOSE.parent / source).resolve()
    return mounts


def test_compose_mounts_the_repository_configuration() -> None:
    prometheus = _mounts("prometheus")
    # Written beside this work (deploy/prometheus/): the paths are fixed, the files theirs.
    assert prometheus == {"/etc/prometheus": DEPLOY / "prometheus"}
    assert _mounts("alertmanager") == {
        "/etc/alertmanager/alertmanager.yml": DEPLOY / "prometheus" / "alertmanager.yml"
    }
    grafana = _mounts("grafana")
    assert grafana == {
        "/etc/grafana/provisioning": GRAFANA / "provisioning",
        "/var/lib/grafana/dashboards/evalserve": DASHBOARD.parent,
    }
    assert all(path.is_dir() for path in grafana.values())
    environment = _compose()["services"]["grafana"]["environment"]
    assert (
        environment["GF_DASHBOARDS_DEFAULT_HOME_DASHBOARD_PATH"]
        == f"/var/lib/grafana/dashboards/evalserve/{DASHBOARD.name}"
    )


def test_prometheus_config_scrapes_and_alerts_the_compose_services() -> None:
    config = _yaml(PROMETHEUS_YML)
    targets = {
        target
        for job in config["scrape_configs"]
        for static in job.get("static_configs", [])
        for target in static["targets"]
    }
    assert f"evalserve:{REST_PORT}" in targets
    alertmanagers = {
        target
        for manager in config["alerting"]["alertmanagers"]
        for static in manager["static_configs"]
        for target in static["targets"]
    }
    assert alertmanagers == {"alertmanager:9093"}


def test_grafana_provisioning_points_at_the_dashboard_and_the_compose_prometheus() -> None:
    (datasources,) = [_yaml(path) for path in (GRAFANA / "provisioning" / "datasources").iterdir()]
    by_type = {source["type"]: source for source in datasources["datasources"]}
    prometheus = by_type["prometheus"]
    assert prometheus["url"] == "http://prometheus:9090" and prometheus["isDefault"] is True
    assert by_type["alertmanager"]["url"] == "http://alertmanager:9093"
    variable = next(v for v in _dashboard()["templating"]["list"] if v["name"] == "datasource")
    assert variable["current"]["value"] == prometheus["uid"]
    scrape = _yaml(PROMETHEUS_YML)["global"]["scrape_interval"]
    assert prometheus["jsonData"]["timeInterval"] == scrape
    (providers,) = [_yaml(path) for path in (GRAFANA / "provisioning" / "dashboards").iterdir()]
    (provider,) = providers["providers"]
    assert provider["type"] == "file"
    assert _mounts("grafana")[provider["options"]["path"]] == DASHBOARD.parent


# ---------------------------------------------------------------------------------- dashboard


def test_dashboard_structure() -> None:
    dashboard = _dashboard()
    assert dashboard["uid"] and dashboard["title"] and isinstance(dashboard["schemaVersion"], int)
    panels = dashboard["panels"]
    ids = [panel["id"] for panel in panels]
    assert len(ids) == len(set(ids)), "panel ids are unique"
    cells: set[tuple[int, int]] = set()
    for panel in panels:
        grid = panel["gridPos"]
        assert grid["x"] >= 0 and grid["x"] + grid["w"] <= 24, panel["title"]
        area = {
            (x, y)
            for x in range(grid["x"], grid["x"] + grid["w"])
            for y in range(grid["y"], grid["y"] + grid["h"])
        }
        assert not area & cells, f"{panel['title']} overlaps another panel"
        cells |= area
    source = {"type": "prometheus", "uid": "${datasource}"}
    for panel in _query_panels():
        assert panel["title"] and panel["datasource"] == source, panel["title"]
        refs = [target["refId"] for target in panel["targets"]]
        assert refs and len(refs) == len(set(refs)), panel["title"]
        for target in panel["targets"]:
            assert target["datasource"] == source and target["expr"].strip(), panel["title"]
    for variable in dashboard["templating"]["list"]:
        if variable["type"] == "query":
            assert variable["datasource"] == source


def _recording_rules() -> dict[str, str]:
    """The recording rules of the rules file: name -> expression."""
    groups = _yaml(RULES)["groups"]
    return {rule["record"]: rule["expr"] for g in groups for rule in g["rules"] if "record" in rule}


def _metric_names(text: str) -> tuple[set[str], set[str]]:
    """The contract metrics (evalserve_...) and the recorded series (evalserve:...) in ``text``."""
    raw = set(re.findall(r"\bevalserve_[a-z0-9_]+", text))
    recorded = set(re.findall(r"\bevalserve:[a-z0-9_:]+", text))
    return raw, recorded


def test_dashboard_queries_only_contract_metrics_and_recorded_series() -> None:
    contract = _contract_metrics()
    rules = _recording_rules()
    variables = [v["definition"] for v in _dashboard()["templating"]["list"] if "definition" in v]
    used: set[str] = set()
    recorded: set[str] = set()
    for text in [*_exprs(), *variables]:
        raw, named = _metric_names(text)
        used |= raw
        recorded |= named
    # A recorded series must be one the rules file records (compose and the PrometheusRule
    # load it), and counts as reading the contract metrics it is built from.
    assert recorded - set(rules) == set()
    pending = set(recorded)
    while pending:
        raw, named = _metric_names(rules[pending.pop()])
        used |= raw
        pending |= (named & set(rules)) - recorded
        recorded |= named & set(rules)
    assert used - contract == set()
    # Every contract gauge and counter a person watches is on the dashboard.
    assert {
        "evalserve_model_metric",
        "evalserve_model_metric_ci_lower",
        "evalserve_model_metric_ci_upper",
        "evalserve_model_class_metric",
        "evalserve_model_drift_z",
        "evalserve_model_drift_p_value",
        "evalserve_model_drift_significant",
        "evalserve_model_drift_insufficient_data",
        "evalserve_model_monitor_statistic",
        "evalserve_model_monitor_threshold",
        "evalserve_model_monitor_alarm",
        "evalserve_model_last_evaluation_timestamp_seconds",
        "evalserve_model_evaluations_total",
        "evalserve_model_rows_total",
        "evalserve_requests_total",
        "evalserve_request_duration_seconds_bucket",
        "evalserve_request_rows_bucket",
        "evalserve_model_series",
        "evalserve_model_series_overflow_total",
    } <= used


def test_dashboard_shows_auc_with_its_interval_per_model_monitor_drift_samples_and_latency() -> (
    None
):
    panels = _query_panels()

    def panels_with(*needles: str) -> list[dict[str, Any]]:
        return [
            p for p in panels if all(any(n in t["expr"] for t in p["targets"]) for n in needles)
        ]

    bounds = ("_ci_lower:last_over_7d{", "_ci_upper:last_over_7d{")
    (auc,) = [p for p in panels_with('metric="roc_auc"', *bounds) if p["type"] == "timeseries"]
    assert auc["repeat"] == "model" and "$model" in auc["title"]
    assert panels_with("evalserve:model_drift_z:last_over_7d{")
    assert panels_with("evalserve:model_drift_p_value:last_over_7d{")
    assert panels_with("evalserve:model_drift_significant:last_over_7d{")
    # the AUC monitor: its statistic against its threshold on a log scale, and its alarm
    (monitor,) = panels_with(
        "evalserve:model_monitor_statistic:last_over_7d{", "evalserve:model_monitor_threshold:"
    )
    assert monitor["fieldConfig"]["defaults"]["custom"]["scaleDistribution"]["type"] == "log"
    (alarm,) = [
        p
        for p in panels_with("evalserve:model_monitor_alarm:last_over_7d{")
        if p["type"] == "state-timeline"
    ]
    assert "EvalserveModelAUCDegraded" in alarm["description"]
    assert panels_with("n_samples")
    assert panels_with("rate(evalserve_model_evaluations_total")
    (latency,) = panels_with("evalserve_request_duration_seconds_bucket")
    assert all(t["expr"].startswith("histogram_quantile(") for t in latency["targets"])
    assert latency["fieldConfig"]["defaults"]["unit"] == "s"
    (errors,) = [
        p for p in panels_with("evalserve_requests_total") if "!~" in p["targets"][0]["expr"]
    ]
    assert "code" in errors["targets"][0]["expr"]


def test_dashboard_variables_are_defined_and_filter_every_model_query() -> None:
    variables = {v["name"]: v for v in _dashboard()["templating"]["list"]}
    assert {"datasource", "model", "version", "segment"} <= set(variables)
    for name in ("model", "version", "segment"):
        assert variables[name]["multi"] and variables[name]["includeAll"]
        assert variables[name]["allValue"] == ".*"  # also matches the empty segment / version
    builtin = {"__rate_interval", "__interval", "__range"}
    texts = [*_exprs(), *(p["title"] for p in _query_panels())]
    texts += [v["definition"] for v in variables.values() if "definition" in v]
    used = {name for text in texts for name in re.findall(r"\$(\w+)", text)}
    assert used - builtin <= set(variables)
    for expr in _exprs():
        model_series = "evalserve_model_" in expr or "evalserve:model_" in expr
        if model_series and "evalserve_model_series" not in expr:
            assert all(f'{label}=~"${label}"' in expr for label in ("model", "version", "segment"))


def _substituted(expr: str) -> str:
    return re.sub(r"\$(\w+)", ".*", expr.replace("$__rate_interval", "5m"))


PROMTOOL = shutil.which("promtool")
needs_promtool = pytest.mark.skipif(PROMTOOL is None, reason="promtool is not installed")


@needs_promtool
def test_dashboard_promql_parses(tmp_path: Path) -> None:
    rules = {
        "groups": [
            {
                "name": "dashboard",
                "rules": [
                    {"record": f"dashboard:query_{i}:check", "expr": _substituted(expr)}
                    for i, expr in enumerate(_exprs())
                ],
            }
        ]
    }
    path = tmp_path / "dashboard.rules.yml"
    path.write_text(yaml.safe_dump(rules), encoding="utf-8")
    result = subprocess.run(
        [str(PROMTOOL), "check", "rules", str(path)], capture_output=True, text=True, timeout=30
    )
    assert result.returncode == 0, result.stdout + result.stderr


@needs_promtool
def test_dashboard_takes_each_models_value_from_the_replica_that_evaluated_it_last(
    tmp_path: Path,
) -> None:
    """Replica a evaluated fraud v3 at t=100 (AUC 0.9), replica b at t=200 (AUC 0.7): the
    dashboard shows 0.7, not the max, and still shows it after replica b restarted (its series
    end at 4m) while replica a keeps exporting its older 0.9. The segment "eu" is a series of
    its own. The panel reads the recording rules, so the test loads the rules file."""
    (auc,) = [
        t["expr"]
        for p in _query_panels()
        if p.get("repeat") == "model"
        for t in p["targets"]
        if t["refId"] == "A"
    ]

    def series(name: str, instance: str, values: str, **labels: str) -> dict[str, str]:
        labels = {
            "job": "evalserve",
            "instance": instance,
            "model": "fraud",
            "version": "3",
            **labels,
        }
        text = ",".join(f'{k}="{v}"' for k, v in labels.items())
        return {"series": f"{name}{{{text}}}", "values": values}

    stamp = "evalserve_model_last_evaluation_timestamp_seconds"
    expected = [
        {"labels": '{model="fraud", version="3"}', "value": 0.7},
        {"labels": '{model="fraud", version="3", segment="eu"}', "value": 0.8},
    ]
    tests = {
        "rule_files": [str(RULES)],
        "evaluation_interval": "1m",
        "tests": [
            {
                "interval": "1m",
                "input_series": [
                    series("evalserve_model_metric", "a:8000", "0.9x12", metric="roc_auc"),
                    series(stamp, "a:8000", "100x12"),
                    series("evalserve_model_metric", "b:8000", "0.7x3 stale", metric="roc_auc"),
                    series(stamp, "b:8000", "200x3 stale"),
                    series(
                        "evalserve_model_metric", "a:8000", "0.8x12", metric="roc_auc", segment="eu"
                    ),
                    series(stamp, "a:8000", "300x12", segment="eu"),
                ],
                "promql_expr_test": [
                    {"expr": _substituted(auc), "eval_time": when, "exp_samples": expected}
                    for when in ("2m", "10m")
                ],
            }
        ],
    }
    path = tmp_path / "dashboard_test.yml"
    path.write_text(yaml.safe_dump(tests), encoding="utf-8")
    result = subprocess.run(
        [str(PROMTOOL), "test", "rules", str(path)], capture_output=True, text=True, timeout=60
    )
    assert result.returncode == 0, result.stdout + result.stderr


# ---------------------------------------------------------------------------------- Kubernetes


def test_kustomization_lists_every_manifest() -> None:
    kustomization = _yaml(K8S / "kustomization.yaml")
    assert sorted(kustomization["resources"]) == [path.name for path in _manifest_files()]
    kinds = sorted(obj["kind"] for obj in _objects())
    assert kinds == sorted(
        [
            "ConfigMap",
            "Deployment",
            "HorizontalPodAutoscaler",
            "PodDisruptionBudget",
            "PrometheusRule",
            "Service",
            "ServiceAccount",
            "ServiceMonitor",
        ]
    )


@pytest.mark.parametrize("version", K8S_VERSIONS)
def test_core_objects_validate_against_the_kubernetes_schemas(version: str) -> None:
    checked = 0
    for obj in _objects():
        if obj["kind"] in OPERATOR_KINDS:
            continue
        try:
            kubernetes_validate.validate(obj, version, strict=True)
        except kubernetes_validate.ValidationError as error:
            path = ".".join(str(part) for part in error.path)
            pytest.fail(f"{obj['kind']}/{obj['metadata']['name']}: {path}: {error.message}")
        checked += 1
    assert checked == 6


def test_the_validator_rejects_what_it_should() -> None:
    """The schemas are strict: an unknown field and a named port in a gRPC probe fail."""
    deployment = json.loads(json.dumps(_object("Deployment")))
    container = deployment["spec"]["template"]["spec"]["containers"][0]
    container["readinessProbe"]["grpc"]["port"] = "grpc"  # gRPC probes take a number only
    with pytest.raises(kubernetes_validate.ValidationError):
        kubernetes_validate.validate(deployment, K8S_VERSIONS[0], strict=True)
    service = json.loads(json.dumps(_object("Service")))
    service["spec"]["portz"] = []
    with pytest.raises(kubernetes_validate.ValidationError):
        kubernetes_validate.validate(service, K8S_VERSIONS[0], strict=True)


def test_deployment_runs_the_image_hardened() -> None:
    spec = _object("Deployment")["spec"]["template"]["spec"]
    pod = spec["securityContext"]
    assert pod["runAsNonRoot"] is True and pod["runAsUser"] != 0
    container = _container()
    security = container["securityContext"]
    assert security["readOnlyRootFilesystem"] is True
    assert security["allowPrivilegeEscalation"] is False
    assert security["capabilities"]["drop"] == ["ALL"]
    mounts = {mount["mountPath"]: mount["name"] for mount in container["volumeMounts"]}
    assert "emptyDir" in next(v for v in spec["volumes"] if v["name"] == mounts["/tmp"])
    assert (
        container["image"].split(":")[0]
        == _compose()["services"]["evalserve"]["image"].split(":")[0]
    )
    for kind in ("requests", "limits"):
        assert {"cpu", "memory"} <= set(container["resources"][kind])
    assert not spec.get("automountServiceAccountToken", True)


def test_deployment_settings_ports_and_probes() -> None:
    container = _container()
    env = {var["name"]: var["value"] for var in container["env"]}
    assert all(_settings_env(name) for name in env)
    assert env["EVALSERVE_HOST"] == "0.0.0.0"
    ports = {port["name"]: port["containerPort"] for port in container["ports"]}
    assert ports == {
        "http": int(env.get("EVALSERVE_REST_PORT", REST_PORT)),
        "grpc": int(env.get("EVALSERVE_GRPC_PORT", GRPC_PORT)),
    }
    # Native gRPC probes (grpc.health.v1.Health) on the gRPC port for start-up and readiness.
    for probe in ("startupProbe", "readinessProbe"):
        assert container[probe]["grpc"]["port"] == ports["grpc"], probe
    liveness = container["livenessProbe"]["httpGet"]
    assert liveness["path"] == "/healthz" and liveness["port"] in ("http", ports["http"])
    startup = container["startupProbe"]
    assert startup["periodSeconds"] * startup["failureThreshold"] >= 30


def test_termination_grace_outlasts_the_pre_stop_sleep_and_the_drain() -> None:
    spec = _object("Deployment")["spec"]["template"]["spec"]
    container = _container()
    command = container["lifecycle"]["preStop"]["exec"]["command"]
    assert command[0] == "sleep"
    env = {var["name"]: var["value"] for var in container["env"]}
    drain = float(env.get("EVALSERVE_SHUTDOWN_GRACE_SECONDS", SHUTDOWN_GRACE)) + DRAIN_TAIL
    assert spec["terminationGracePeriodSeconds"] > float(command[1]) + drain


def test_selectors_ports_and_scaling_agree() -> None:
    deployment = _object("Deployment")
    pod_labels = deployment["spec"]["template"]["metadata"]["labels"]

    def selects_pods(match_labels: dict[str, str]) -> bool:
        return bool(match_labels) and match_labels.items() <= pod_labels.items()

    assert selects_pods(deployment["spec"]["selector"]["matchLabels"])
    service = _object("Service")
    assert selects_pods(service["spec"]["selector"])
    assert selects_pods(_object("PodDisruptionBudget")["spec"]["selector"]["matchLabels"])
    container_ports = {port["name"]: port["containerPort"] for port in _container()["ports"]}
    service_ports = {port["name"]: port for port in service["spec"]["ports"]}
    assert set(service_ports) == set(container_ports)
    for name, port in service_ports.items():
        assert port["targetPort"] in (name, container_ports[name])
        assert port["port"] == container_ports[name]
    assert service_ports["grpc"]["appProtocol"] == "kubernetes.io/h2c"  # HTTP/2 cleartext
    assert service_ports["http"]["appProtocol"] == "http"
    hpa = _object("HorizontalPodAutoscaler")
    target = hpa["spec"]["scaleTargetRef"]
    assert (target["kind"], target["name"]) == ("Deployment", deployment["metadata"]["name"])
    (metric,) = hpa["spec"]["metrics"]
    assert metric["resource"]["name"] == "cpu"
    assert hpa["spec"]["minReplicas"] == deployment["spec"]["replicas"] == 2
    assert hpa["spec"]["maxReplicas"] > hpa["spec"]["minReplicas"]
    assert _object("PodDisruptionBudget")["spec"]["minAvailable"] < hpa["spec"]["minReplicas"]
    account = _object("ServiceAccount")["metadata"]["name"]
    assert deployment["spec"]["template"]["spec"]["serviceAccountName"] == account


def test_service_monitor_scrapes_the_metrics_port() -> None:
    monitor = _object("ServiceMonitor")
    assert monitor["apiVersion"] == "monitoring.coreos.com/v1"
    assert monitor["metadata"]["labels"]["release"]  # kube-prometheus-stack selects by it
    service = _object("Service")
    assert (
        monitor["spec"]["selector"]["matchLabels"].items() <= service["metadata"]["labels"].items()
    )
    (endpoint,) = monitor["spec"]["endpoints"]
    assert endpoint["port"] in {port["name"] for port in service["spec"]["ports"]}
    assert endpoint["path"] == "/metrics"
    duration = re.compile(r"\d+[smh]")
    assert duration.fullmatch(endpoint["interval"]) and duration.fullmatch(
        endpoint["scrapeTimeout"]
    )
    assert set(monitor) == {"apiVersion", "kind", "metadata", "spec"}


def test_prometheus_rule_wraps_the_rules_file() -> None:
    rule = _object("PrometheusRule")
    assert rule["apiVersion"] == "monitoring.coreos.com/v1"
    labels = rule["metadata"]["labels"]
    assert labels["release"] == _object("ServiceMonitor")["metadata"]["labels"]["release"]
    assert rule["spec"] == {"groups": _yaml(RULES)["groups"]}
    for group in rule["spec"]["groups"]:
        assert isinstance(group["name"], str) and group["rules"]
        for item in group["rules"]:
            assert ("record" in item) != ("alert" in item) and item["expr"], item


def test_grafana_dashboard_configmap_holds_the_dashboard() -> None:
    configmap = _object("ConfigMap")
    assert configmap["metadata"]["labels"]["grafana_dashboard"] == "1"
    assert json.loads(configmap["data"][DASHBOARD.name]) == _dashboard()
    # kubectl apply keeps the object in an annotation limited to 256 KiB.
    assert len(configmap["data"][DASHBOARD.name].encode()) < 200 * 1024


def test_generated_manifests_are_up_to_date() -> None:
    generator = _generator()
    for path, text in generator.outputs().items():
        assert path.read_text(encoding="utf-8") == text, (
            f"{path.relative_to(ROOT)} is stale: run python deploy/k8s/generate.py"
        )
    assert generator.main(["--check"]) == 0
