"""Static checks of the deploy kit: compose.yaml, the commands and the variables (the image is
checked in deploy_build, the Kubernetes path in deploy_k8s).

No container runtime, helm or cluster runs here, so every check reads the files and compares
them with what the code really accepts: each command is parsed by the click command it names
(found through the installed console scripts, as a shell would), each variable is looked up in
the settings classes and the documentation, each probe in the routes of the process it probes.
Every check returns its problems in words; an empty list is a pass.
"""

from __future__ import annotations

import importlib
import importlib.metadata
import importlib.util
import inspect
import json
import re
import sys
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import click
import jsonschema
import yaml  # type: ignore[import-untyped]

from corpus_pipeline.common.settings import CorpusSettings, LLMRole

from .support import REPO_ROOT

COMPOSE = REPO_ROOT / "compose.yaml"
DOCKERFILE = REPO_ROOT / "Dockerfile"
DOCKERIGNORE = REPO_ROOT / ".dockerignore"
MAKEFILE = REPO_ROOT / "Makefile"
HELM_VALUES = REPO_ROOT / "deploy" / "helm" / "values.yaml"
K8S_MANIFESTS = REPO_ROOT / "deploy" / "k8s" / "corpus.yaml"
COMPOSE_SCHEMA = REPO_ROOT / "deploy" / "schemas" / "compose-spec.json"
POSTGRES_INSTANCE = REPO_ROOT / "deploy" / "dagster.postgres.yaml"
DOCS = (REPO_ROOT / "docs" / "configuration.md", REPO_ROOT / "docs" / "scaling.md")
# The tag compose.yaml builds the Dockerfile under.
COMPOSE_IMAGE = "corpus:local"
# The run queue, pools and retries that every Dagster instance of the project holds.
INSTANCE_POLICY_KEYS = ("concurrency", "run_queue", "run_retries")


def load_yaml(path: Path) -> Any:
    return yaml.safe_load(path.read_text(encoding="utf-8"))


def load_yaml_documents(path: Path) -> list[Any]:
    return [doc for doc in yaml.safe_load_all(path.read_text(encoding="utf-8")) if doc]


# -- the Compose specification -----------------------------------------------------------------


def compose_schema_problems(compose: Mapping[str, Any]) -> list[str]:
    """Errors of the vendored Compose Specification schema, plus the obsolete `version` key."""
    schema = json.loads(COMPOSE_SCHEMA.read_text(encoding="utf-8"))
    validator = jsonschema.Draft201909Validator(schema)
    problems = [
        f"{'/'.join(map(str, error.path)) or '(top)'}: {error.message}"
        for error in validator.iter_errors(compose)
    ]
    if "version" in compose:
        problems.append("version: obsolete in the Compose Specification")
    return problems


# -- commands ----------------------------------------------------------------------------------


class CommandError(ValueError):
    """A command line that its program would refuse."""


@dataclass(frozen=True)
class ParsedCommand:
    program: str
    path: tuple[str, ...]  # the subcommands, e.g. ("api", "grpc")
    params: Mapping[str, Any]

    @property
    def name(self) -> str:
        return " ".join((self.program, *self.path))


def console_script(program: str) -> click.Command:
    """The click command behind an installed console script. Dagster's scripts are small
    functions that call a module-level click group; that group is the one they name."""
    found = [
        ep for ep in importlib.metadata.entry_points(group="console_scripts") if ep.name == program
    ]
    if not found:
        raise CommandError(f"'{program}' is not an installed entry point")
    target = found[0].load()
    if isinstance(target, click.Command):
        return target
    function = inspect.unwrap(target)
    scope = vars(sys.modules[function.__module__])
    named = {id(scope[n]): scope[n] for n in function.__code__.co_names if n in scope}
    commands = [value for value in named.values() if isinstance(value, click.Command)]
    if len(commands) != 1:
        raise CommandError(f"cannot tell which click command '{program}' runs")
    return commands[0]


def parse_command(argv: Sequence[str], files: Mapping[str, Path] | None = None) -> ParsedCommand:
    """Parse argv as its program would (subcommands, options, types, required values), without
    running it. `files` maps paths inside the container to the repository files mounted there,
    for options that insist the file exists."""
    if not argv:
        raise CommandError("empty command")
    program, *args = [str((files or {}).get(arg, arg)) for arg in argv]
    command = console_script(program)
    context = click.Context(command, info_name=program)
    path: list[str] = []
    while isinstance(command, click.Group):
        if not args:
            raise CommandError(f"'{program} {' '.join(path)}' needs a subcommand")
        name, *args = args
        sub = command.get_command(context, name)
        if sub is None:
            raise CommandError(f"'{' '.join((program, *path))}' has no command '{name}'")
        path.append(name)
        context = click.Context(sub, info_name=name, parent=context)
        command = sub
    try:
        parsed = command.make_context(context.info_name, list(args), parent=context.parent)
    except click.ClickException as exc:
        raise CommandError(f"{' '.join((program, *path))}: {exc.format_message()}") from None
    return ParsedCommand(program, tuple(path), parsed.params)


def command_problems(argv: Sequence[str], files: Mapping[str, Path] | None = None) -> list[str]:
    try:
        parse_command(argv, files)
    except CommandError as exc:
        return [str(exc)]
    return []


def health_routes(command: ParsedCommand) -> set[str]:
    """The unauthenticated routes a probe of this process may ask for, read from its code."""
    if command.name == "corpus serve":
        from query_service.api.routes.health import router

        return {route.path for route in router.routes}  # type: ignore[attr-defined]
    if command.name == "corpus ingest-api":
        from corpus_pipeline.upload_api.routes.health import router as upload_router

        return {route.path for route in upload_router.routes}  # type: ignore[attr-defined]
    if command.name == "dagster-webserver":
        import dagster_webserver.webserver

        source = inspect.getsource(dagster_webserver.webserver)
        return set(re.findall(r'Route\(\s*"(/\w+)"', source))
    return set()


def probe_problems(
    probe: Sequence[str], served: Sequence[str], files: Mapping[str, Path] | None = None
) -> list[str]:
    """A healthcheck against the process that `served` starts: a real entry point, or a Python
    one-liner that fetches one of that process's health routes on the port it listens on."""
    if list(probe[:2]) != ["python", "-c"]:
        try:
            checker, target = parse_command(probe), parse_command(served, files)
        except CommandError as exc:
            return [str(exc)]
        port = checker.params.get("port")
        if port is not None and port != target.params.get("port"):
            return [f"'{checker.name}' checks port {port}, not the port of '{target.name}'"]
        return []
    code = probe[2] if len(probe) == 3 else ""
    try:
        compile(code, "<healthcheck>", "exec")
    except SyntaxError as exc:
        return [f"healthcheck is not Python: {exc}"]
    match = re.search(r"http://127\.0\.0\.1:(\d+)(/[\w/]*)", code)
    if match is None:
        return ["healthcheck fetches no local URL"]
    try:
        target = parse_command(served, files)
    except CommandError as exc:
        return [str(exc)]
    problems = []
    if int(match.group(1)) != target.params.get("port"):
        problems.append(f"healthcheck port {match.group(1)} is not the port of '{target.name}'")
    if match.group(2) not in health_routes(target):
        problems.append(f"healthcheck path {match.group(2)} is no health route of '{target.name}'")
    return problems


# -- environment variables ---------------------------------------------------------------------


def setting_variables() -> set[str]:
    """Every variable the settings classes read (the roles' nested fields with `__`)."""
    from query_service.config import ServiceSettings

    names = {f"CORPUS_{name.upper()}" for name in ServiceSettings.model_fields}
    for name, info in CorpusSettings.model_fields.items():
        role = info.annotation
        if isinstance(role, type) and issubclass(role, LLMRole):
            names |= {f"CORPUS_{name.upper()}__{sub.upper()}" for sub in role.model_fields}
        else:
            names.add(f"CORPUS_{name.upper()}")
    return names


def instance_variables(instance: Any) -> set[str]:
    """The `env:` names a Dagster instance file reads."""
    if isinstance(instance, Mapping):
        found = {str(instance["env"])} if set(instance) == {"env"} else set()
        return found.union(*(instance_variables(v) for v in instance.values()))
    if isinstance(instance, list):
        return set().union(*(instance_variables(v) for v in instance))
    return set()


def _quoted(name: str, markdown: str) -> bool:
    """Whether the text names the variable in code (`NAME` or `NAME=value`)."""
    return re.search(rf"`[^`\n]*\b{re.escape(name)}\b[^`\n]*`", markdown) is not None


def env_problems(names: Iterable[str]) -> list[str]:
    """A CORPUS_* variable must be a setting (or read by deploy/dagster.postgres.yaml) and be
    in docs/configuration.md; any other must be explained in configuration.md or scaling.md."""
    configuration, scaling = (doc.read_text(encoding="utf-8") for doc in DOCS)
    known = setting_variables() | instance_variables(load_yaml(POSTGRES_INSTANCE))
    problems = []
    for name in sorted(set(names)):
        if name.startswith("CORPUS_"):
            if name not in known:
                problems.append(f"{name} is no setting of corpus")
            elif not _quoted(name, configuration):
                problems.append(f"{name} is not in docs/configuration.md")
        elif not _quoted(name, configuration + scaling):
            problems.append(f"{name} is explained in neither configuration.md nor scaling.md")
    return problems


# -- compose.yaml: the services and how they fit -----------------------------------------------

# The processes that open the Dagster instance: they must all open the PostgreSQL one.
INSTANCE_USERS = {
    "dagster api grpc",
    "dagster-webserver",
    "dagster-daemon run",
    "corpus ingest-api",
}


def corpus_services(compose: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
    """The services that run the project's image."""
    return {n: s for n, s in compose["services"].items() if s.get("image") == COMPOSE_IMAGE}


def mounted_files(compose: Mapping[str, Any], service: Mapping[str, Any]) -> dict[str, Path]:
    """Container path → repository file, for a service's `configs:`."""
    return {
        config["target"]: (COMPOSE.parent / compose["configs"][config["source"]]["file"]).resolve()
        for config in service.get("configs", [])
    }


def service_env(service: Mapping[str, Any], image_env: Mapping[str, str]) -> dict[str, str]:
    """A service's environment as its processes see it: the image's ENV, then its own."""
    own = {k: str(v) for k, v in (service.get("environment") or {}).items()}
    return {**image_env, **own}


def volume_at(service: Mapping[str, Any], path: str) -> str | None:
    """The named volume a service mounts at path."""
    for volume in service.get("volumes", []):
        source, _, rest = str(volume).partition(":")
        if rest.split(":")[0] == path:
            return source
    return None


def compose_command_problems(compose: Mapping[str, Any]) -> list[str]:
    """Each corpus service's command and healthcheck, as their programs would parse them."""
    problems = []
    for name, service in corpus_services(compose).items():
        command = [str(word) for word in service.get("command", [])]
        files = mounted_files(compose, service)
        refused = command_problems(command, files)
        problems += [f"{name}: {p}" for p in refused]
        if refused:
            continue  # its healthcheck cannot be judged against it
        test = (service.get("healthcheck") or {}).get("test")
        if not (isinstance(test, list) and test[:1] == ["CMD"]):
            problems.append(f"{name}: no healthcheck in exec form")
            continue
        probe = [str(word) for word in test[1:]]
        problems += [f"{name} healthcheck: {p}" for p in probe_problems(probe, command, files)]
    return problems


@dataclass(frozen=True)
class Service:
    """A corpus service of compose.yaml, its command parsed and its environment resolved."""

    name: str
    command: ParsedCommand
    env: dict[str, str]
    spec: Mapping[str, Any]
    files: dict[str, Path]


def parsed_services(compose: Mapping[str, Any], image_env: Mapping[str, str]) -> list[Service]:
    """The corpus services whose command parses (compose_command_problems reports the others)."""
    services = []
    for name, spec in corpus_services(compose).items():
        files = mounted_files(compose, spec)
        try:
            command = parse_command(spec["command"], files)
        except CommandError:
            continue
        services.append(Service(name, command, service_env(spec, image_env), spec, files))
    return services


def instance_problems(compose: Mapping[str, Any], image_env: Mapping[str, str]) -> list[str]:
    """Every process that opens the Dagster instance gets deploy/dagster.postgres.yaml at
    $CORPUS_HOME/dagster/dagster.yaml (where the CLI and the upload API open it), DAGSTER_HOME
    there too, and every variable the file reads."""
    problems = []
    for service in parsed_services(compose, image_env):
        if service.command.name not in INSTANCE_USERS:
            continue
        folder = f"{service.env.get('CORPUS_HOME')}/dagster"
        if service.files.get(f"{folder}/dagster.yaml") != POSTGRES_INSTANCE.resolve():
            problems.append(
                f"{service.name}: the PostgreSQL instance is not at {folder}/dagster.yaml"
            )
            continue
        if service.env.get("DAGSTER_HOME") != folder:
            problems.append(f"{service.name}: DAGSTER_HOME is not {folder}")
        for variable in sorted(instance_variables(load_yaml(POSTGRES_INSTANCE)) - set(service.env)):
            problems.append(f"{service.name}: {variable}, read by the instance, is not set")
    return problems


def workspace_problems(compose: Mapping[str, Any], image_env: Mapping[str, str]) -> list[str]:
    """The workspace file given to the webserver and the daemon names the code-location
    service of compose.yaml and the port its gRPC server listens on."""
    services = parsed_services(compose, image_env)
    grpc = {
        s.name: s.command.params["port"] for s in services if s.command.name == "dagster api grpc"
    }
    problems = []
    for service in services:
        for workspace in service.command.params.get("workspace") or ():
            for entry in load_yaml(Path(workspace))["load_from"]:
                server = entry.get("grpc_server") or {}
                if grpc.get(str(server.get("host"))) != server.get("port"):
                    problems.append(f"{service.name}: {workspace} names no gRPC server: {server}")
    return problems


def replica_problems(compose: Mapping[str, Any], image_env: Mapping[str, str]) -> list[str]:
    """The writers share one home; each query replica (`corpus serve`) has a home of its own
    and follows the writers' S3 store, to which the publisher mirrors every revision
    (docs/operations.md, "Query replicas"); the services that check keys read one key file,
    on a volume they share."""
    services = parsed_services(compose, image_env)
    writers = [s for s in services if s.command.name in INSTANCE_USERS]
    replicas = [s for s in services if s.command.name == "corpus serve"]
    problems = []
    writer_homes = {volume_at(s.spec, s.env["CORPUS_HOME"]) for s in writers}
    if len(writer_homes) != 1 or None in writer_homes:
        problems.append(f"the writers share no single home volume: {writer_homes}")
    if len(replicas) < 2:
        problems.append(f"{len(replicas)} query replica(s), not two")
    stores = {s.env.get("CORPUS_OBJECT_STORE_URL", "") for s in writers}
    replica_homes = [volume_at(s.spec, s.env["CORPUS_HOME"]) for s in replicas]
    for replica in replicas:
        store = replica.env.get("CORPUS_OBJECT_STORE_URL", "")
        if {store} != stores or not store.startswith("s3://"):
            problems.append(f"{replica.name}: not on the writers' s3:// store ({store!r})")
    if (
        None in replica_homes
        or len(set(replica_homes)) < len(replicas)
        or set(replica_homes) & writer_homes
    ):
        problems.append(f"the replicas have no home of their own each: {replica_homes}")
    keyed = replicas + [s for s in writers if s.command.name == "corpus ingest-api"]
    key_files = {
        (
            s.env.get("CORPUS_API_KEYS_FILE"),
            volume_at(s.spec, str(Path(s.env.get("CORPUS_API_KEYS_FILE", "")).parent)),
        )
        for s in keyed
    }
    if len(key_files) != 1 or None in next(iter(key_files)):
        problems.append(f"the services read no single key file on a shared volume: {key_files}")
    return problems
