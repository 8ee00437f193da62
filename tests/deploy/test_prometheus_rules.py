"""deploy/prometheus/ with promtool (Debian package ``prometheus``, installed by
``make prometheus-tools``, a step of ``make test``): the rules and the config check, and the
rules' unit tests (rules/evalserve_test.yml) pass. Plus the conventions promtool does not
enforce: every alert has a severity and runbook-ish annotations, and its unit tests hold at
least one case where it must fire and one where it must not."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

PROMETHEUS_DIR = Path(__file__).resolve().parents[2] / "deploy" / "prometheus"
RULES = PROMETHEUS_DIR / "rules" / "evalserve.rules.yml"
RULES_TEST = PROMETHEUS_DIR / "rules" / "evalserve_test.yml"
CONFIG = PROMETHEUS_DIR / "prometheus.yml"
ALERTMANAGER = PROMETHEUS_DIR / "alertmanager.yml"
SEVERITIES = {"critical", "warning", "info"}


def _promtool(*args: str, cwd: Path = PROMETHEUS_DIR) -> str:
    promtool = shutil.which("promtool")
    if promtool is None:
        pytest.fail("promtool is not installed: run `make prometheus-tools` (Debian: prometheus)")
    # The unit tests simulate days of rule evaluations (the 7-day level, a daily model's 2-day
    # staleness): about a minute on a busy machine.
    done = subprocess.run(
        [promtool, *args], cwd=cwd, capture_output=True, text=True, timeout=300, check=False
    )
    output = done.stdout + done.stderr
    assert done.returncode == 0, f"promtool {' '.join(args)} failed:\n{output}"
    return output


def _yaml(path: Path) -> Any:
    return yaml.safe_load(path.read_text(encoding="utf-8"))


def _rules() -> list[dict[str, Any]]:
    return [rule for group in _yaml(RULES)["groups"] for rule in group["rules"]]


def test_promtool_check_rules() -> None:
    output = _promtool("check", "rules", str(RULES))
    assert f"SUCCESS: {len(_rules())} rules found" in output, output


def test_promtool_check_config_loads_the_rules_file() -> None:
    # rule_files is a glob (rules/*.rules.yml) relative to prometheus.yml: it must find exactly
    # the project's rules file, and not the unit-test file beside it.
    output = _promtool("check", "config", str(CONFIG))
    assert "SUCCESS: 1 rule files found" in output, output
    assert f"{RULES.name}\n" in output and RULES_TEST.name not in output, output


def test_promtool_unit_tests_of_the_rules() -> None:
    output = _promtool("test", "rules", RULES_TEST.name, cwd=RULES_TEST.parent)
    assert "SUCCESS" in output, output


def test_recording_rules_are_named_with_colons_and_the_evalserve_prefix() -> None:
    for rule in _rules():
        if "record" in rule:
            assert re.fullmatch(r"evalserve:[a-z0-9_]+(:[a-z0-9_]+)?", rule["record"]), rule


def test_alerts_carry_a_severity_and_runbook_annotations() -> None:
    alerts = [rule for rule in _rules() if "alert" in rule]
    assert {alert["alert"] for alert in alerts} == {
        "EvalserveModelAUCDegraded",
        "EvalserveModelAUCBelowFloor",
        "EvalserveModelAUCBelowTrailing7d",
        "EvalserveModelEvaluationsStale",
        "EvalserveModelTooFewSamples",
        "EvalserveBusy",
    }
    for alert in alerts:
        assert alert["labels"]["severity"] in SEVERITIES, alert["alert"]
        annotations = alert["annotations"]
        assert {"summary", "description"} <= set(annotations), alert["alert"]
        # a model's alert names the model; the service's alerts name the job
        labels = ("model", "version", "segment") if "Model" in alert["alert"] else ("job",)
        for label in labels:
            assert f"$labels.{label}" in annotations["description"], (alert["alert"], label)
        assert "for" in alert, alert["alert"]


def _anchors(page: Path) -> set[str]:
    """The anchors MkDocs gives the headings of ``page`` (its default slugify); lines of code
    blocks that start with # are not headings."""
    text = re.sub(r"(?ms)^```.*?^```", "", page.read_text(encoding="utf-8"))
    anchors = set()
    for heading in re.findall(r"(?m)^#+\s+(.+?)\s*$", text):
        words = re.sub(r"[^\w\s-]", "", heading).strip().lower()
        anchors.add(re.sub(r"[-\s]+", "-", words))
    return anchors


def test_documentation_annotations_name_a_section_of_the_docs() -> None:
    # an alert that links the docs (docs/<page>.md#<heading>) links a heading that exists
    linked = [
        rule["annotations"]["documentation"]
        for rule in _rules()
        if "alert" in rule and "documentation" in rule["annotations"]
    ]
    assert linked, "the degradation alert links its documentation"
    for link in linked:
        path, _, anchor = link.partition("#")
        page = PROMETHEUS_DIR.parents[1] / path
        assert path.startswith("docs/") and page.is_file(), link
        assert anchor in _anchors(page), link


def test_every_alert_has_unit_tests_that_fire_and_that_do_not() -> None:
    fires: set[str] = set()
    silent: set[str] = set()
    for case in _yaml(RULES_TEST)["tests"]:
        for check in case.get("alert_rule_test", []):
            (fires if check.get("exp_alerts") else silent).add(check["alertname"])
    alerts = {rule["alert"] for rule in _rules() if "alert" in rule}
    assert alerts <= fires, alerts - fires
    assert alerts <= silent, alerts - silent


def test_alertmanager_routes_to_defined_receivers() -> None:
    # amtool is not in the prometheus package; this checks what the compose setup relies on.
    config = _yaml(ALERTMANAGER)
    receivers = {receiver["name"] for receiver in config["receivers"]}
    routes = [config["route"], *config["route"].get("routes", [])]
    assert all(route["receiver"] in receivers for route in routes)
    assert {"model", "version", "segment"} <= set(config["route"]["group_by"])
    alerts = {rule["alert"] for rule in _rules() if "alert" in rule}
    for inhibit in config.get("inhibit_rules", []):
        named = re.findall(r"Evalserve\w+", " ".join(inhibit["source_matchers"]))
        named += re.findall(r"Evalserve\w+", " ".join(inhibit["target_matchers"]))
        assert set(named) <= alerts, named
