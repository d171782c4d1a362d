"""deploy/kubernetes, the Kustomize base docs/SCALING.md points to: every object it lists is a valid Kubernetes
object (checked against the API's own schemas, strictly: a misspelt field fails), the pieces fit together
(Services select the pods, named ports exist, the image is the one `images:` sets), and the mock's arguments and
probes are commands `mockserver` accepts."""
from __future__ import annotations

import argparse
from typing import Any

import kubernetes_validate
import pytest
import yaml

from conftest import ROOT
from mockserver.cli import COMMANDS

BASE = ROOT / "deploy" / "kubernetes"
K8S_VERSION = "1.30.0"  # the oldest Kubernetes still widely run that the manifests must suit


def _kustomization() -> dict[str, Any]:
    return yaml.safe_load((BASE / "kustomization.yaml").read_text())


def _objects() -> list[dict[str, Any]]:
    return [doc for name in _kustomization()["resources"]
            for doc in yaml.safe_load_all((BASE / name).read_text()) if doc]


def _pods() -> list[dict[str, Any]]:
    return [o["spec"]["template"] for o in _objects() if o["kind"] == "Deployment"]


def _parses(argv: list[str]) -> None:
    """`mockserver ARGV` parses as the command line it is (argparse exits 2 on an unknown flag)."""
    parser = argparse.ArgumentParser(prog="mockserver")
    commands = parser.add_subparsers(dest="command", required=True)
    for name, command in COMMANDS.items():
        command.add_arguments(commands.add_parser(name))
    parser.parse_args(argv)


@pytest.mark.parametrize("obj", _objects(), ids=lambda o: f"{o['kind']}/{o['metadata']['name']}")
def test_each_object_is_valid_for_kubernetes(obj: dict[str, Any]) -> None:
    kubernetes_validate.validate(obj, K8S_VERSION, strict=True)


def test_services_select_pods_and_their_named_ports() -> None:
    pods = _pods()
    for service in (o for o in _objects() if o["kind"] == "Service"):
        selector = service["spec"]["selector"]
        matched = [p for p in pods if selector.items() <= p["metadata"]["labels"].items()]
        assert matched, f"Service {service['metadata']['name']} selects no pod"
        ports = {port["name"] for pod in matched for c in pod["spec"]["containers"] for port in c.get("ports", [])}
        for port in service["spec"]["ports"]:
            assert port["targetPort"] in ports, (service["metadata"]["name"], port)


def test_the_mock_runs_the_image_of_this_repository_with_arguments_and_probes_mockserver_accepts() -> None:
    images = {i["name"] for i in _kustomization()["images"]}
    mock = next(c for p in _pods() for c in p["spec"]["containers"] if c["name"] == "mockserver")
    assert mock["image"] in images
    dockerfile = (ROOT / "Dockerfile").read_text()
    assert 'ENTRYPOINT ["mockserver", "serve"]' in dockerfile  # so the container's args are serve's flags
    _parses(["serve", *mock["args"]])
    for probe in ("readinessProbe", "livenessProbe"):
        command = mock[probe]["exec"]["command"]
        assert command[:2] == ["mockserver", "health"], command
        _parses(command[1:])
    assert "--live" in mock["livenessProbe"]["exec"]["command"]  # a lost Redis must not restart every replica
    env = {e["name"]: e for e in mock["env"]}
    assert env["MOCKSERVER_CONTROL_TOKEN"]["valueFrom"]["secretKeyRef"] == {"name": "mockserver",
                                                                             "key": "control-token"}
    redis_service = next(o for o in _objects() if o["kind"] == "Service" and "redis" in o["metadata"]["name"])
    assert env["MOCKSERVER_STATE"]["value"].startswith(f"redis://{redis_service['metadata']['name']}:")


def test_the_base_lists_only_files_that_exist() -> None:
    listed = set(_kustomization()["resources"])
    present = {p.name for p in BASE.glob("*.yaml")} - {"kustomization.yaml"}
    assert listed == present  # a manifest added but not listed would never be applied
