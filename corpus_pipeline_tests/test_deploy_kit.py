"""The deploy kit holds together without a container runtime: compose.yaml follows the Compose
Specification; every command is one its program accepts; every variable is a documented
setting; the image installs what `make setup` installs; the Helm values and the manifests run
the same image, module and instance policy. Each check is also shown to refuse a broken copy."""

from __future__ import annotations

import copy
import tomllib
from pathlib import Path
from typing import Any

import dagster as dg
import pytest

from .deploy_build import (
    Dockerfile,
    context_problems,
    install_problems,
    python_problems,
    runtime_problems,
)
from .deploy_k8s import helm_problems, k8s_problems, kit_env_names
from .deploy_kit import (
    COMPOSE,
    DOCKERFILE,
    DOCKERIGNORE,
    HELM_VALUES,
    K8S_MANIFESTS,
    MAKEFILE,
    command_problems,
    compose_command_problems,
    compose_schema_problems,
    env_problems,
    instance_problems,
    load_yaml,
    load_yaml_documents,
    probe_problems,
    replica_problems,
    workspace_problems,
)
from .support import REPO_ROOT


def _compose() -> dict[str, Any]:
    # YAML anchors make services share one dict: a mutation replaces, never edits in place.
    return copy.deepcopy(load_yaml(COMPOSE))


def _dockerfile(text: str | None = None) -> Dockerfile:
    return Dockerfile.parse(text if text is not None else DOCKERFILE.read_text(encoding="utf-8"))


def _image_env() -> dict[str, str]:
    return _dockerfile().env()


def _pyproject() -> dict[str, Any]:
    return tomllib.loads((REPO_ROOT / "pyproject.toml").read_text(encoding="utf-8"))


def _replace(service: dict[str, Any], key: str, value: Any) -> None:
    service[key] = value


def _set_env(service: dict[str, Any], **changes: str | None) -> None:
    env = {**service["environment"], **changes}
    service["environment"] = {k: v for k, v in env.items() if v is not None}


# -- compose.yaml and the Compose Specification ------------------------------------------------


def test_compose_follows_the_compose_specification() -> None:
    assert compose_schema_problems(_compose()) == []


@pytest.mark.parametrize(
    ("where", "key", "value", "expected"),
    [
        (None, "services_extra", {}, "(top): 'services_extra' does not match any of the regexes"),
        (None, "version", "3.9", "version: obsolete"),
        ("query-1", "commands", ["corpus", "serve"], "services/query-1: 'commands' does not match"),
        (
            "upload-api",
            "depends_on",
            {"postgres": {"condition": "healthy"}},
            "upload-api/depends_on",
        ),
    ],
)
def test_the_schema_refuses_a_broken_compose_file(
    where: str | None, key: str, value: Any, expected: str
) -> None:
    compose = _compose()
    _replace(compose["services"][where] if where else compose, key, value)
    assert any(expected in problem for problem in compose_schema_problems(compose))


# -- commands and healthchecks -----------------------------------------------------------------


def test_every_compose_command_and_healthcheck_is_accepted_by_its_program() -> None:
    assert compose_command_problems(_compose()) == []


def test_the_image_default_command_and_healthcheck_are_real() -> None:
    dockerfile = _dockerfile()
    command = dockerfile.exec_form("CMD")
    assert command_problems(command) == []
    assert probe_problems(dockerfile.exec_form("HEALTHCHECK"), command) == []


@pytest.mark.parametrize(
    ("service", "key", "value", "expected"),
    [
        ("query-1", "command", ["corpus", "serve", "--made-up-flag"], "No such option"),
        ("upload-api", "command", ["corpus", "ingest-apy"], "has no command 'ingest-apy'"),
        (
            "dagster-code",
            "command",
            ["dagster", "api", "grpc", "-p", "four"],
            "not a valid integer",
        ),
        ("dagster-daemon", "command", ["dagster-daemonn", "run"], "not an installed entry point"),
        (
            "dagster-webserver",
            "command",
            ["dagster-webserver", "-w", "/etc/dagster/other.yaml"],
            "does not exist",
        ),
        (
            "query-2",
            "healthcheck",
            {
                "test": [
                    "CMD",
                    "python",
                    "-c",
                    "import urllib.request; urllib.request.urlopen('http://127.0.0.1:8000/nope')",
                ]
            },
            "no health route",
        ),
        (
            "upload-api",
            "healthcheck",
            {
                "test": [
                    "CMD",
                    "python",
                    "-c",
                    "import urllib.request; urllib.request.urlopen('http://127.0.0.1:8000/readyz')",
                ]
            },
            "is not the port",
        ),
        (
            "dagster-code",
            "healthcheck",
            {"test": ["CMD", "dagster", "api", "grpc-health-check", "-p", "4001"]},
            "checks port 4001",
        ),
    ],
)
def test_a_made_up_command_flag_or_probe_is_refused(
    service: str, key: str, value: Any, expected: str
) -> None:
    compose = _compose()
    _replace(compose["services"][service], key, value)
    problems = compose_command_problems(compose)
    assert len(problems) == 1 and service in problems[0] and expected in problems[0], problems


# -- environment variables ---------------------------------------------------------------------


def _kit_env(compose: dict[str, Any]) -> set[str]:
    return kit_env_names(
        compose, _dockerfile(), load_yaml(HELM_VALUES), load_yaml_documents(K8S_MANIFESTS)
    )


def test_every_variable_of_the_kit_is_a_documented_setting() -> None:
    names = _kit_env(_compose())
    assert {"CORPUS_HOME", "CORPUS_OBJECT_STORE_URL", "CORPUS_DAGSTER_PG_PASSWORD"} <= names
    assert env_problems(names) == []


@pytest.mark.parametrize(
    ("variable", "expected"),
    [
        ("CORPUS_FOO", "CORPUS_FOO is no setting of corpus"),
        # Named in configuration.md (a test hook), but no setting: still refused.
        ("CORPUS_PUBLISH_PAUSE_AT", "CORPUS_PUBLISH_PAUSE_AT is no setting of corpus"),
        (
            "UPLOAD_TIMEOUT",
            "UPLOAD_TIMEOUT is explained in neither configuration.md nor scaling.md",
        ),
    ],
)
def test_an_unknown_or_undocumented_variable_is_refused(variable: str, expected: str) -> None:
    compose = _compose()
    _set_env(compose["services"]["upload-api"], **{variable: "1"})
    assert env_problems(_kit_env(compose)) == [expected]


# -- how the services fit ----------------------------------------------------------------------


def test_every_dagster_process_and_the_upload_api_open_the_postgres_instance() -> None:
    assert instance_problems(_compose(), _image_env()) == []


def test_a_writer_missing_an_instance_variable_or_the_instance_is_caught() -> None:
    compose = _compose()
    _set_env(compose["services"]["dagster-code"], CORPUS_DAGSTER_PG_HOST=None)
    _replace(compose["services"]["upload-api"], "configs", [])
    assert instance_problems(compose, _image_env()) == [
        "dagster-code: CORPUS_DAGSTER_PG_HOST, read by the instance, is not set",
        "upload-api: the PostgreSQL instance is not at /data/dagster/dagster.yaml",
    ]


def test_the_workspace_names_the_code_location_and_its_port() -> None:
    assert workspace_problems(_compose(), _image_env()) == []
    compose = _compose()
    code = compose["services"]["dagster-code"]
    _replace(code, "command", [*code["command"][:-1], "4001"])
    assert len(workspace_problems(compose, _image_env())) == 2  # the webserver and the daemon


def test_two_replicas_follow_the_published_revision_through_the_bucket() -> None:
    assert replica_problems(_compose(), _image_env()) == []


@pytest.mark.parametrize(
    ("change", "expected"),
    [
        (
            lambda s: _replace(
                s["query-2"], "volumes", ["query-1-home:/data", "api-keys:/etc/corpus/keys"]
            ),
            "no home of their own",
        ),
        (
            lambda s: _replace(
                s["query-1"], "volumes", ["corpus-home:/data", "api-keys:/etc/corpus/keys"]
            ),
            "no home of their own",
        ),
        (
            lambda s: _set_env(s["query-1"], CORPUS_OBJECT_STORE_URL=None),
            "query-1: not on the writers'",
        ),
        (
            lambda s: _set_env(s["query-2"], CORPUS_API_KEYS_FILE="/data/keys.json"),
            "no single key file",
        ),
        (lambda s: s.pop("query-2"), "1 query replica(s)"),
    ],
)
def test_a_replica_that_cannot_follow_the_revision_is_caught(change: Any, expected: str) -> None:
    compose = _compose()
    change(compose["services"])
    problems = replica_problems(compose, _image_env())
    assert len(problems) == 1 and expected in problems[0], problems


# -- the Dockerfile against the Makefile -------------------------------------------------------


def test_the_image_installs_what_make_setup_installs() -> None:
    makefile = MAKEFILE.read_text(encoding="utf-8")
    assert install_problems(_dockerfile(), makefile) == []
    assert python_problems(_dockerfile(), _pyproject()) == []


@pytest.mark.parametrize(
    ("old", "new", "expected"),
    [
        ("ARG UV_VERSION=", "ARG UV_VERSION=0.0.1", "not the Makefile's UV_VERSION"),
        (
            "uv sync --frozen --no-dev --compile-bytecode",
            "uv sync --no-dev --compile-bytecode",
            "lacks ['--frozen']",
        ),
        (
            "uv sync --frozen --no-dev --compile-bytecode",
            "uv sync --frozen --compile-bytecode",
            "lacks ['--no-dev']",
        ),
        ("--compile-bytecode\n", "--compile-bytecode --upgrade\n", "adds ['--upgrade']"),
        (
            "--no-install-recommends tesseract-ocr",
            "--no-install-recommends tesseract-ocr-all",
            "apt installs",
        ),
        (
            "install -y --no-install-recommends tesseract-ocr",
            "install -y tesseract-ocr",
            "without --no-install-recommends",
        ),
    ],
)
def test_an_install_step_unlike_the_makefile_is_caught(old: str, new: str, expected: str) -> None:
    text = DOCKERFILE.read_text(encoding="utf-8")
    assert old in text
    if old == "ARG UV_VERSION=":
        text = "\n".join(new if line.startswith(old) else line for line in text.splitlines())
    else:
        text = text.replace(old, new, 1)
    problems = install_problems(_dockerfile(text), MAKEFILE.read_text(encoding="utf-8"))
    assert any(expected in problem for problem in problems), problems


def test_the_build_context_holds_every_file_the_build_needs() -> None:
    dockerignore = DOCKERIGNORE.read_text(encoding="utf-8")
    assert context_problems(_dockerfile(), dockerignore, _pyproject()) == []
    assert context_problems(_dockerfile(), dockerignore + "dagster.yaml\n", _pyproject()) == [
        "dagster.yaml is left out by .dockerignore"
    ]
    without = DOCKERFILE.read_text(encoding="utf-8").replace(
        "COPY query_service/ query_service/", ""
    )
    assert context_problems(_dockerfile(without), dockerignore, _pyproject()) == [
        "query_service is not copied into the image"
    ]


def test_the_image_runs_unprivileged_with_its_home_in_a_volume() -> None:
    assert runtime_problems(_dockerfile()) == []
    as_root = DOCKERFILE.read_text(encoding="utf-8").replace("USER corpus", "USER root")
    assert runtime_problems(_dockerfile(as_root)) == ["the image runs as root"]


# -- Kubernetes ---------------------------------------------------------------------------------


def test_the_helm_values_run_our_image_module_and_instance_policy() -> None:
    assert helm_problems(load_yaml(HELM_VALUES), load_yaml_documents(K8S_MANIFESTS)) == []


def _deployment(values: dict[str, Any]) -> dict[str, Any]:
    deployment: dict[str, Any] = values["dagster-user-deployments"]["deployments"][0]
    return deployment


@pytest.mark.parametrize(
    ("change", "expected"),
    [
        (
            lambda v: _replace(
                _deployment(v), "dagsterApiGrpcArgs", ["-m", "corpus_pipeline.nowhere"]
            ),
            "not workspace.yaml's",
        ),
        (
            lambda v: _replace(_deployment(v), "dagsterApiGrpcArgs", ["--module", "x", "--bogus"]),
            "No such option",
        ),
        (
            lambda v: _replace(_deployment(v)["image"], "tag", "0.2.0"),
            "image registry.example.com/corpus:0.2.0",
        ),
        (lambda v: _replace(_deployment(v), "volumeMounts", []), "is on no volume"),
        (
            lambda v: _replace(
                v["additionalInstanceConfig"]["concurrency"]["runs"], "max_concurrent_runs", 8
            ),
            "differs from",
        ),
        (
            lambda v: _replace(v["dagsterDaemon"]["runCoordinator"], "enabled", True),
            "second runCoordinator",
        ),
        (
            lambda v: _replace(
                v["runLauncher"]["config"]["customRunLauncher"], "class", "NoLauncher"
            ),
            "does not exist",
        ),
    ],
)
def test_helm_values_that_drift_from_the_kit_are_caught(change: Any, expected: str) -> None:
    values = copy.deepcopy(load_yaml(HELM_VALUES))
    change(values)
    problems = helm_problems(values, load_yaml_documents(K8S_MANIFESTS))
    assert any(expected in problem for problem in problems), problems


def test_dagster_accepts_the_instance_the_chart_is_given(tmp_path: Path) -> None:
    """The chart writes our `additionalInstanceConfig` and run launcher into its instance file:
    Dagster itself loads them (the storage block aside, which needs the database)."""
    values = load_yaml(HELM_VALUES)
    launcher = values["runLauncher"]["config"]["customRunLauncher"]
    config = {
        **values["additionalInstanceConfig"],
        "run_launcher": {"module": launcher["module"], "class": launcher["class"], "config": {}},
        "telemetry": values["telemetry"],
    }
    import yaml  # type: ignore[import-untyped]

    (tmp_path / "dagster.yaml").write_text(yaml.safe_dump(config), encoding="utf-8")
    with dg.DagsterInstance.from_config(str(tmp_path)) as instance:
        assert isinstance(instance.run_launcher, dg.DefaultRunLauncher)
        assert instance.run_retries_max_retries == 1
        assert instance.get_concurrency_config().pool_config.default_pool_limit == 1


def test_the_manifests_beside_the_chart_are_consistent() -> None:
    assert k8s_problems(load_yaml_documents(K8S_MANIFESTS), load_yaml(HELM_VALUES)) == []


def _container(manifests: list[Any], deployment: str) -> dict[str, Any]:
    (doc,) = [
        d for d in manifests if d["kind"] == "Deployment" and d["metadata"]["name"] == deployment
    ]
    container: dict[str, Any] = doc["spec"]["template"]["spec"]["containers"][0]
    return container


def _env_entry(container: dict[str, Any], name: str) -> dict[str, Any]:
    (entry,) = [e for e in container["env"] if e["name"] == name]
    return entry  # type: ignore[no-any-return]


@pytest.mark.parametrize(
    ("deployment", "change", "expected"),
    [
        (
            "corpus-query",
            lambda c: _replace(c["readinessProbe"]["httpGet"], "path", "/ready"),
            "readinessProbe",
        ),
        (
            "corpus-query",
            lambda c: _replace(c["livenessProbe"]["httpGet"], "port", 8001),
            "livenessProbe",
        ),
        (
            "corpus-query",
            lambda c: _replace(c, "command", ["corpus", "serve", "--port", "x"]),
            "not a valid integer",
        ),
        (
            "corpus-upload-api",
            lambda c: c["volumeMounts"].append({"name": "nowhere", "mountPath": "/x"}),
            "has no volume",
        ),
        (
            "corpus-upload-api",
            lambda c: _replace(_env_entry(c, "CORPUS_DAGSTER_PG_HOST"), "value", "elsewhere"),
            "CORPUS_DAGSTER_PG_HOST is not the chart's",
        ),
    ],
)
def test_manifests_that_drift_are_caught(deployment: str, change: Any, expected: str) -> None:
    manifests = copy.deepcopy(load_yaml_documents(K8S_MANIFESTS))
    change(_container(manifests, deployment))
    problems = k8s_problems(manifests, load_yaml(HELM_VALUES))
    assert len(problems) == 1 and expected in problems[0], problems
