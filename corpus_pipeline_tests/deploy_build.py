"""Static checks of the image: the Dockerfile, read instruction by instruction, against the
Makefile (how `make setup` installs), pyproject.toml and .dockerignore."""

from __future__ import annotations

import json
import re
import shlex
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from fnmatch import fnmatch
from pathlib import Path
from typing import Any

# -- the Dockerfile and the Makefile -----------------------------------------------------------


@dataclass(frozen=True)
class Instruction:
    stage: str
    keyword: str
    args: str


@dataclass
class Dockerfile:
    """The instructions of a Dockerfile, each with the build stage it belongs to."""

    instructions: list[Instruction]
    stages: list[str] = field(default_factory=list)

    @classmethod
    def parse(cls, text: str) -> Dockerfile:
        parsed = cls([])
        stage = ""
        for line in re.sub(r"\\\n", " ", text).splitlines():
            line = line.strip()
            if not line or line.startswith("#"):
                continue
            keyword, _, args = line.partition(" ")
            if keyword.upper() == "FROM":
                words = args.split()
                stage = words[-1] if len(words) == 3 and words[1].upper() == "AS" else words[0]
                parsed.stages.append(stage)
            parsed.instructions.append(Instruction(stage, keyword.upper(), args.strip()))
        return parsed

    @property
    def runtime(self) -> str:
        return self.stages[-1]

    def all(self, keyword: str, stage: str | None = None) -> list[str]:
        return [
            i.args for i in self.instructions if i.keyword == keyword and stage in (None, i.stage)
        ]

    def env(self, stage: str | None = None) -> dict[str, str]:
        """A stage's ENV, the runtime's by default (`$PATH` stays unexpanded)."""
        values: dict[str, str] = {}
        for args in self.all("ENV", stage or self.runtime):
            for part in shlex.split(args):
                key, _, value = part.partition("=")
                values[key] = value
        return values

    def arg_default(self, name: str) -> str | None:
        for args in self.all("ARG"):
            key, _, value = args.partition("=")
            if key == name:
                return value
        return None

    def run_commands(self, stage: str | None = None) -> list[list[str]]:
        """Each command of each RUN (shell form), split at `&&`."""
        return [shlex.split(part) for args in self.all("RUN", stage) for part in args.split("&&")]

    def exec_form(self, keyword: str) -> list[str]:
        """The runtime's last CMD or ENTRYPOINT, or its HEALTHCHECK's CMD, in exec form."""
        args = self.all(keyword, self.runtime)[-1]
        if keyword == "HEALTHCHECK":
            args = args.split(" CMD ", 1)[1]
        return [str(value) for value in json.loads(args)]

    def copied_sources(self) -> list[str]:
        """What COPY takes from the build context (not from another stage)."""
        sources = []
        for args in self.all("COPY"):
            words = args.split()
            if not any(word.startswith("--from") for word in words):
                sources += [w.rstrip("/") for w in words[:-1] if not w.startswith("--")]
        return sources


def ignored(path: str, patterns: Iterable[str]) -> bool:
    """Whether a .dockerignore pattern (a path or glob; `**/` for any depth) excludes path."""
    parts = Path(path).parts
    prefixes = ["/".join(parts[: i + 1]) for i in range(len(parts))]
    for raw in patterns:
        pattern = raw.strip().rstrip("/")
        if not pattern or pattern.startswith("#"):
            continue
        name = pattern.removeprefix("**/")
        if any(fnmatch(p, pattern) or fnmatch(Path(p).name, name) for p in prefixes):
            return True
    return False


def makefile_variable(makefile: str, name: str) -> str | None:
    match = re.search(rf"^{name}\s*:?=\s*(\S+)", makefile, re.MULTILINE)
    return match.group(1) if match else None


def makefile_commands(makefile: str, *words: str) -> list[list[str]]:
    """The Makefile's shell commands holding every word, split as a shell would (redirections
    dropped); a fragment the splitting cut inside quotes is skipped."""
    commands = []
    for line in re.sub(r"\\\n", " ", makefile).splitlines():
        for part in re.split(r"&&|\|\||;", line.split(" #", 1)[0]):
            try:
                tokens = [t for t in shlex.split(part) if not t.startswith((">", "2>"))]
            except ValueError:
                continue
            if all(word in tokens for word in words):
                commands.append(tokens)
    return commands


def apt_packages(command: Sequence[str]) -> set[str]:
    return {t for t in command[command.index("install") + 1 :] if not t.startswith("-")}


def _apt_installs(commands: Iterable[Sequence[str]]) -> list[set[str]]:
    return [apt_packages(c) for c in commands if "apt-get" in c and "install" in c]


def install_problems(dockerfile: Dockerfile, makefile: str) -> list[str]:
    """The image installs what `make setup` does, the same way: the Makefile's uv through pip,
    the lock file through `uv sync --frozen` with the Makefile's flags (and without the dev
    group), and the Debian packages of `make system-deps` (Tesseract, LibreOffice) without
    recommended extras."""
    problems = []
    uv_version = makefile_variable(makefile, "UV_VERSION")
    if dockerfile.arg_default("UV_VERSION") != uv_version:
        problems.append(f"ARG UV_VERSION is not the Makefile's UV_VERSION ({uv_version})")
    if ["pip", "install", "--no-cache-dir", "uv==${UV_VERSION}"] not in dockerfile.run_commands():
        problems.append("uv is not installed with pip at ${UV_VERSION}")
    make_flags = {t for c in makefile_commands(makefile, "sync") for t in c if t.startswith("-")}
    required = make_flags | {"--frozen", "--no-dev"}
    syncs = [c for c in dockerfile.run_commands() if c[:2] == ["uv", "sync"]]
    if not syncs:
        problems.append("the Dockerfile never runs `uv sync`")
    for sync in syncs:
        flags = {t for t in sync[2:] if t.startswith("-")}
        if required - flags:
            problems.append(f"`{' '.join(sync)}` lacks {sorted(required - flags)}")
        extra = flags - required - {"--no-install-project"}
        if extra:
            problems.append(f"`{' '.join(sync)}` adds {sorted(extra)}")
    wanted = _apt_installs(makefile_commands(makefile, "apt-get", "install"))
    runtime = dockerfile.run_commands(dockerfile.runtime)
    if _apt_installs(runtime) != wanted:
        problems.append(f"apt installs {_apt_installs(runtime)}, `make system-deps` {wanted}")
    if any(
        "install" in c and "--no-install-recommends" not in c for c in runtime if "apt-get" in c
    ):
        problems.append("apt-get install without --no-install-recommends")
    return problems


def python_problems(dockerfile: Dockerfile, pyproject: Mapping[str, Any]) -> list[str]:
    from packaging.specifiers import SpecifierSet

    required = pyproject["project"]["requires-python"]
    version = re.search(r"python:(\d+\.\d+)", dockerfile.arg_default("PYTHON_IMAGE") or "")
    if version is None or f"{version.group(1)}.0" not in SpecifierSet(required):
        return [f"the base image's Python is not within requires-python {required}"]
    return []


def context_problems(
    dockerfile: Dockerfile, dockerignore: str, pyproject: Mapping[str, Any]
) -> list[str]:
    """Every file the build needs is copied, and none is left out of the build context: the
    lock and metadata, the README that pyproject names, the packages of the wheel, and
    dagster.yaml, which the CLI copies into a new instance (`orchestration.runs.REPO_ROOT`)."""
    needed = {"pyproject.toml", "uv.lock", str(pyproject["project"]["readme"]), "dagster.yaml"}
    needed |= set(pyproject["tool"]["hatch"]["build"]["targets"]["wheel"]["packages"])
    copied = dockerfile.copied_sources()
    problems = [f"{name} is not copied into the image" for name in sorted(needed - set(copied))]
    patterns = dockerignore.splitlines()
    problems += [
        f"{name} is left out by .dockerignore" for name in copied if ignored(name, patterns)
    ]
    return problems


def runtime_problems(dockerfile: Dockerfile) -> list[str]:
    """The runtime stage runs unprivileged, keeps CORPUS_HOME in a volume, puts the locked
    environment's entry points first on PATH and DAGSTER_HOME where the CLI opens its instance."""
    env = dockerfile.env()
    problems = []
    users = dockerfile.all("USER", dockerfile.runtime)
    if not users or users[-1].split(":")[0] in ("root", "0"):
        problems.append("the image runs as root")
    volumes = [v for args in dockerfile.all("VOLUME", dockerfile.runtime) for v in json.loads(args)]
    if env.get("CORPUS_HOME") not in volumes:
        problems.append("CORPUS_HOME is not a volume")
    if env.get("DAGSTER_HOME") != f"{env.get('CORPUS_HOME')}/dagster":
        problems.append("DAGSTER_HOME is not $CORPUS_HOME/dagster")
    venv = dockerfile.env(dockerfile.stages[0]).get("UV_PROJECT_ENVIRONMENT")
    if not venv or not env.get("PATH", "").startswith(f"{venv}/bin:"):
        problems.append("PATH does not start with the locked environment's bin/")
    return problems
