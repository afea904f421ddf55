"""Static checks of the Kubernetes path: the values for the official Dagster chart and the
manifests that run the upload API and the query replicas beside it."""

from __future__ import annotations

import importlib
import importlib.util
import re
from collections.abc import Iterable, Iterator, Mapping
from typing import Any

from .deploy_build import Dockerfile
from .deploy_kit import (
    COMPOSE,
    INSTANCE_POLICY_KEYS,
    POSTGRES_INSTANCE,
    CommandError,
    corpus_services,
    health_routes,
    instance_variables,
    load_yaml,
    parse_command,
)
from .support import REPO_ROOT

# -- Kubernetes: the chart's values and the manifests beside it ---------------------------------


def grpc_command(deployment: Mapping[str, Any]) -> list[str]:
    """The command the chart runs for a user-code deployment (its deployment-user template)."""
    port = str(deployment["port"])
    return [
        "dagster",
        "api",
        "grpc",
        "-h",
        "0.0.0.0",
        "-p",
        port,
        *deployment["dagsterApiGrpcArgs"],
    ]


def containers(
    manifests: Iterable[Mapping[str, Any]],
) -> Iterator[tuple[str, Mapping[str, Any], Mapping[str, Any]]]:
    """(deployment name, container, pod spec) of every Deployment."""
    for doc in manifests:
        if doc.get("kind") == "Deployment":
            pod = doc["spec"]["template"]["spec"]
            for container in pod["containers"]:
                yield doc["metadata"]["name"], container, pod


def claims(manifests: Iterable[Mapping[str, Any]]) -> dict[str, list[str]]:
    """PersistentVolumeClaim name → access modes."""
    return {
        doc["metadata"]["name"]: doc["spec"]["accessModes"]
        for doc in manifests
        if doc.get("kind") == "PersistentVolumeClaim"
    }


def mount_problems(
    where: str,
    mounts: Iterable[Mapping[str, Any]],
    volumes: Iterable[Mapping[str, Any]],
    declared: Mapping[str, list[str]],
    home: str | None,
) -> list[str]:
    """Mounts name declared volumes, claims exist, and CORPUS_HOME sits on a volume."""
    by_name = {volume["name"]: volume for volume in volumes}
    problems = []
    for mount in mounts:
        volume = by_name.get(mount["name"])
        if volume is None:
            problems.append(f"{where}: mount '{mount['name']}' has no volume")
        elif "persistentVolumeClaim" in volume:
            claim = volume["persistentVolumeClaim"]["claimName"]
            if claim not in declared:
                problems.append(f"{where}: claim '{claim}' is not in deploy/k8s/corpus.yaml")
    if home not in {mount["mountPath"] for mount in mounts}:
        problems.append(f"{where}: CORPUS_HOME ({home}) is on no volume")
    return problems


def helm_problems(values: Mapping[str, Any], manifests: list[Any]) -> list[str]:
    """The chart runs our image's code location as compose does: the same gRPC module as
    workspace.yaml and compose.yaml, the image of the manifests, the shared home on a
    ReadWriteMany claim, a writable DAGSTER_HOME, the driver of deploy/dagster.postgres.yaml,
    and that file's run queue, pools and retries word for word."""
    problems = []
    instance = load_yaml(POSTGRES_INSTANCE)
    module = load_yaml(REPO_ROOT / "workspace.yaml")["load_from"][0]["python_module"]["module_name"]
    images = {c["image"] for _, c, _ in containers(manifests)}
    declared = claims(manifests)
    for deployment in values["dagster-user-deployments"]["deployments"]:
        name = deployment["name"]
        try:
            command = parse_command(grpc_command(deployment))
        except CommandError as exc:
            problems.append(f"{name}: {exc}")
            continue
        served = str(command.params.get("module_name"))
        if served != module or importlib.util.find_spec(served) is None:
            problems.append(f"{name}: serves {served}, not workspace.yaml's {module}")
        image = f"{deployment['image']['repository']}:{deployment['image']['tag']}"
        if images != {image}:
            problems.append(f"{name}: image {image}, the manifests {sorted(images)}")
        mounts = deployment.get("volumeMounts", [])
        home = deployment.get("env", {}).get("CORPUS_HOME")
        problems += mount_problems(name, mounts, deployment.get("volumes", []), declared, home)
        if values["global"]["dagsterHome"] not in {m["mountPath"] for m in mounts}:
            problems.append(f"{name}: DAGSTER_HOME is no writable volume")
        volumes = {v["name"]: v for v in deployment.get("volumes", [])}
        for mount in mounts:
            claim = volumes.get(mount["name"], {}).get("persistentVolumeClaim", {}).get("claimName")
            if mount["mountPath"] == home and "ReadWriteMany" not in declared.get(claim, []):
                problems.append(f"{name}: the home's claim is not ReadWriteMany")
    scheme = instance["storage"]["postgres"]["postgres_db"]["scheme"]
    if values["postgresql"].get("postgresqlScheme") != scheme:
        problems.append(f"postgresqlScheme is not {scheme}")
    policy = {key: instance[key] for key in INSTANCE_POLICY_KEYS}
    if values.get("additionalInstanceConfig") != policy:
        problems.append("additionalInstanceConfig differs from deploy/dagster.postgres.yaml")
    daemon = values.get("dagsterDaemon", {})
    for block in ("runCoordinator", "runRetries"):
        if daemon.get(block, {}).get("enabled", True):
            problems.append(f"dagsterDaemon.{block} would write a second {block} block")
    launcher = values["runLauncher"]["config"]["customRunLauncher"]
    if not hasattr(importlib.import_module(launcher["module"]), launcher["class"]):
        problems.append(f"run launcher {launcher['module']}.{launcher['class']} does not exist")
    return problems


def env_names(container: Mapping[str, Any]) -> set[str]:
    return {entry["name"] for entry in container.get("env", [])}


def k8s_problems(manifests: list[Any], values: Mapping[str, Any]) -> list[str]:
    """Each container runs a real command, probes its own health routes on its own port, mounts
    declared volumes with CORPUS_HOME on one, and, where it mounts the PostgreSQL instance, sets
    the instance's variables to the chart's database."""
    problems = []
    declared = claims(manifests)
    instance_vars = instance_variables(load_yaml(POSTGRES_INSTANCE))
    postgres = values["postgresql"]
    chart_db = {
        "CORPUS_DAGSTER_PG_USER": postgres["postgresqlUsername"],
        "CORPUS_DAGSTER_PG_HOST": postgres["postgresqlHost"],
        "CORPUS_DAGSTER_PG_DB": postgres["postgresqlDatabase"],
    }
    for name, container, pod in containers(manifests):
        try:
            command = parse_command(container["command"])
        except CommandError as exc:
            problems.append(f"{name}: {exc}")
            continue
        for kind in ("readinessProbe", "livenessProbe"):
            get = container.get(kind, {}).get("httpGet", {})
            if get.get("port") != command.params.get("port") or get.get(
                "path"
            ) not in health_routes(command):
                problems.append(f"{name}: {kind} {get} is no health route of '{command.name}'")
        env = {e["name"]: e for e in container.get("env", [])}
        home = env.get("CORPUS_HOME", {}).get("value")
        mounts = container.get("volumeMounts", [])
        problems += mount_problems(name, mounts, pod.get("volumes", []), declared, home)
        if f"{home}/dagster/dagster.yaml" in {m["mountPath"] for m in mounts}:
            problems += [
                f"{name}: {v}, read by the instance, is not set"
                for v in sorted(instance_vars - set(env))
            ]
            for variable, value in chart_db.items():
                if env.get(variable, {}).get("value") != value:
                    problems.append(f"{name}: {variable} is not the chart's {value}")
            secret = (
                env.get("CORPUS_DAGSTER_PG_PASSWORD", {})
                .get("valueFrom", {})
                .get("secretKeyRef", {})
            )
            if secret.get("name") != values["global"]["postgresqlSecretName"]:
                problems.append(f"{name}: the PostgreSQL password is not the chart's Secret")
    return problems


def kit_env_names(
    compose: Mapping[str, Any],
    dockerfile: Dockerfile,
    values: Mapping[str, Any],
    manifests: list[Any],
) -> set[str]:
    """Every variable the kit sets for the project's processes, or asks the operator for
    (`${NAME}` in compose.yaml). The other images' own variables (POSTGRES_*, MINIO_*, MC_HOST_*)
    belong to those images."""
    names = set(dockerfile.env())
    for service in corpus_services(compose).values():
        names |= set(service.get("environment") or {})
    names |= set(re.findall(r"\$\{(\w+)", COMPOSE.read_text(encoding="utf-8")))
    for deployment in values["dagster-user-deployments"]["deployments"]:
        names |= set(deployment.get("env") or {})
    for _, container, _ in containers(manifests):
        names |= env_names(container)
    return names
