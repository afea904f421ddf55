"""API keys at run time: one resolver from a presented key to its principal, used by the upload
API, the HTTP query API and MCP alike, and the managed key file behind `corpus keys`.

Access fails closed. Without a usable key file (missing, blank, without keys, unreadable or
malformed) every request is refused with a 503 that names the file and the command creating a
key — unless open access (`CORPUS_OPEN_ACCESS=1`, refused at start beyond loopback) lets the
local user in while the file is missing or has no keys; a malformed file is never open. The file
is looked at at most once a second (inode, size, modification time) and read again only when
these change, so keys created, revoked or rotated apply to running services within seconds.

The file holds SHA-256 hashes only and is replaced atomically (a temporary file, mode 0600,
then `os.replace`) under a lock beside it, so two `corpus keys` commands never lose a change.
When a key was last used is kept in SQLite beside it, written by each server process at most
once a minute per key, off the request path.
"""

from __future__ import annotations

import fcntl
import ipaddress
import logging
import os
import re
import secrets
import sqlite3
import tempfile
import threading
import time
from collections.abc import Iterable, Iterator
from contextlib import closing, contextmanager, suppress
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Annotated

from fastapi import FastAPI, Request, Security
from fastapi.responses import JSONResponse
from fastapi.security import HTTPAuthorizationCredentials

from corpus_pipeline.access.openapi import API_KEY, BEARER
from corpus_pipeline.contracts.keys import (
    KeyEntry,
    KeyFile,
    KeyFileError,
    KeyRing,
    Principal,
    api_key_from,
    hash_key,
    parse_key_file,
)

log = logging.getLogger("corpus.access")

# The open-access principal: the local user, every namespace (loopback only).
LOCAL = Principal(name="local", namespaces=frozenset({"*"}), writes=frozenset({"*"}))
CREATE_COMMAND = "corpus keys create NAME --read NAMESPACE"
CHECK_SECONDS = 1.0
STATE_PRINCIPAL = "principal"  # where a principal resolved before the route waits (scope state)
USAGE_WRITE_SECONDS = 60.0
NAME_PATTERN = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.@-]{0,63}$")
NAMESPACE_PATTERN = re.compile(r"^([a-z0-9][a-z0-9_-]{0,63}|\*)$")


class AccessDenied(Exception):
    """No access: 401 (no key, or an unknown one) or 503 (no usable key file)."""

    def __init__(self, status: int, detail: str) -> None:
        super().__init__(detail)
        self.status = status
        self.detail = detail


class UnsafeBinding(ValueError):
    """A service that must not start: open access beyond loopback, or `corpus mcp` with a key
    that gives no access."""


class KeyNotFound(LookupError):
    pass


class KeyExists(ValueError):
    pass


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def display_path(path: Path, home: Path | None) -> str:
    """How answers name the key file: under `$CORPUS_HOME`, else by its name (no server paths)."""
    if home is not None and path.is_relative_to(home):
        return f"$CORPUS_HOME/{path.relative_to(home).as_posix()}"
    return path.name


def check_binding(keys_file: Path, open_access: bool, host: str) -> str:
    """The start-up notice of a service binding `host`; UnsafeBinding for open access beyond
    loopback (it lets anyone who reaches the port read and write every namespace)."""
    if open_access and not is_loopback(host):
        raise UnsafeBinding(
            f"CORPUS_OPEN_ACCESS is set: refusing to listen on {host} without keys; bind to "
            f"127.0.0.1, or unset it and create keys with `{CREATE_COMMAND}`"
        )
    resolver = KeyResolver(keys_file, open_access=open_access)
    state = resolver.state()
    if state.ring is not None and state.ring.enabled:
        return f"{len(state.ring)} API key(s) from {keys_file}"
    if state.ring is not None and open_access:
        return f"open access (CORPUS_OPEN_ACCESS) on {host}: no keys in {keys_file}"
    return f"{state.problem}: every request is refused (503) until then"


@dataclass(frozen=True)
class KeyState:
    """One reading of the key file: its keys, or why none are accepted."""

    signature: tuple[int, int, int] | None  # inode, size, mtime (ns); None: read again next time
    ring: KeyRing | None  # None: the file cannot be used (no open access either)
    problem: str  # why no key is accepted; "" when the ring has keys


class KeyResolver:
    """The principal of a presented key, from a key file looked at at most once a second."""

    def __init__(
        self,
        path: Path,
        *,
        open_access: bool = False,
        home: Path | None = None,
        check_seconds: float = CHECK_SECONDS,
    ) -> None:
        self.path = path
        self.open_access = open_access
        self.label = display_path(path, home)
        self._check_seconds = check_seconds
        self._lock = threading.Lock()
        self._checked = float("-inf")
        self._state = KeyState(None, None, "not read yet")
        self._usage = KeyUsage(usage_path(path))
        self._used: dict[str, float] = {}

    def principal(self, api_key: str | None, what: str, client: str | None = None) -> Principal:
        """`principal_for`, and a refusal logged in one line: who (the client's address), what,
        why — never the key."""
        try:
            return self.principal_for(api_key)
        except AccessDenied as exc:
            who = ("an unknown key" if api_key else "no key") + (f" ({client})" if client else "")
            log.warning("denied: %s, %s: %s", who, what, exc.detail)
            raise

    def principal_for(self, api_key: str | None) -> Principal:
        """The key's principal, or AccessDenied (401 for no or an unknown key, 503 without a
        usable key file); open access answers the local user while there are no keys."""
        state = self.state()
        ring = state.ring
        if ring is not None and ring.enabled:
            principal = ring.principal_for(api_key)
            if principal is None:
                raise AccessDenied(401, "missing or invalid API key")
            self._touch(principal.name)
            return principal
        if ring is not None and self.open_access:
            return LOCAL
        raise AccessDenied(503, state.problem)

    def state(self) -> KeyState:
        """The current reading (the file is looked at again after `check_seconds`)."""
        if time.monotonic() - self._checked < self._check_seconds:
            return self._state
        with self._lock:
            if time.monotonic() - self._checked >= self._check_seconds:
                old, self._state = self._state, self._read(self._state)
                self._checked = time.monotonic()
                if self._state is not old and self._state.problem != old.problem:
                    self._report(self._state)
                elif self._state is not old:
                    log.info("API keys reloaded from %s", self.path)
        return self._state

    def _read(self, old: KeyState) -> KeyState:
        command = f"create a key with `{CREATE_COMMAND}`"
        try:
            stat = self.path.stat()
        except FileNotFoundError:
            return KeyState(
                None, KeyRing({}), f"no API keys: {self.label} does not exist; {command}"
            )
        except OSError as exc:
            return KeyState(None, None, f"key file {self.label} cannot be read ({exc.strerror})")
        signature = (stat.st_ino, stat.st_size, stat.st_mtime_ns)
        if signature == old.signature:
            return old
        try:
            text = self.path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            reason = exc.strerror if isinstance(exc, OSError) else "not UTF-8"
            return KeyState(None, None, f"key file {self.label} cannot be read ({reason})")
        try:
            ring = KeyRing.parse(text, self.label)
        except KeyFileError as exc:
            return KeyState(signature, None, f"{exc}; fix it, or move it away and {command}")
        if not ring.enabled:
            return KeyState(signature, ring, f"no API keys: {self.label} holds none; {command}")
        return KeyState(signature, ring, "")

    def _report(self, state: KeyState) -> None:
        if not state.problem:
            log.info("API keys: %d from %s", len(state.ring or ()), self.path)
        elif state.ring is not None and self.open_access:
            log.info("API keys: none in %s; open access for the local user", self.path)
        else:
            log.warning("API keys unusable (%s): %s", self.path, state.problem)

    def _touch(self, name: str) -> None:
        """Note that `name`'s key was used: at most once a minute per key, in a thread."""
        now = time.monotonic()
        with self._lock:
            last = self._used.get(name)
            if last is not None and now - last < USAGE_WRITE_SECONDS:
                return
            self._used[name] = now
        threading.Thread(
            target=self._usage.record,
            args=(name, datetime.now(UTC)),
            name="corpus-key-usage",
            daemon=True,
        ).start()


def may_read(who: Principal, namespace: str) -> bool:
    """`who.may_read(namespace)`, with a refusal logged in one line (who, what, why)."""
    if who.may_read(namespace):
        return True
    log.warning("denied: %s, namespace '%s': not among its namespaces", who.name, namespace)
    return False


def may_write(who: Principal, namespace: str) -> bool:
    """`who.may_write(namespace)`, with a refusal logged in one line (who, what, why)."""
    if who.may_write(namespace):
        return True
    log.warning("denied: %s, writing namespace '%s': not a write namespace", who.name, namespace)
    return False


def may_write_somewhere(who: Principal) -> bool:
    """Whether `who` may write to any namespace (the upload API asks before reading a body),
    with a refusal logged in one line."""
    if who.writes:
        return True
    log.warning("denied: %s, uploading: may write to no namespace", who.name)
    return False


def usage_path(keys_file: Path) -> Path:
    return keys_file.with_name(keys_file.stem + ".last_used.sqlite")


class KeyUsage:
    """When each key (by name) was last used, shared by every process that serves the file."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def _connect(self) -> sqlite3.Connection:
        db = sqlite3.connect(self.path, timeout=5)
        db.execute("create table if not exists last_used (name text primary key, at text not null)")
        return db

    def record(self, name: str, at: datetime) -> None:
        """A failure (say a read-only disk on a replica) costs the record, never a request."""
        try:
            with closing(self._connect()) as db, db:
                db.execute(
                    "insert into last_used values (?, ?) "
                    "on conflict(name) do update set at = max(at, excluded.at)",
                    (name, at.astimezone(UTC).isoformat(timespec="seconds")),
                )
        except (sqlite3.Error, OSError) as exc:
            log.warning("last use of key '%s' not recorded in %s: %s", name, self.path, exc)

    def read(self) -> dict[str, datetime]:
        if not self.path.is_file():
            return {}
        with closing(self._connect()) as db:
            rows = db.execute("select name, at from last_used").fetchall()
        return {name: datetime.fromisoformat(at) for name, at in rows}

    def forget(self, name: str) -> None:
        if self.path.is_file():
            with closing(self._connect()) as db, db:
                db.execute("delete from last_used where name = ?", (name,))


# -- the managed key file (`corpus keys`) -----------------------------------------------------


@dataclass(frozen=True)
class KeyInfo:
    """A key as `corpus keys list` shows it: never the key or its hash."""

    name: str
    namespaces: tuple[str, ...]
    write_namespaces: tuple[str, ...]
    created_at: datetime | None
    last_used: datetime | None


def new_key() -> str:
    return "ck_" + secrets.token_urlsafe(24)


def read_keys(path: Path) -> KeyFile:
    """The file's keys (none when it does not exist); KeyFileError when it is malformed."""
    if not path.is_file():
        return KeyFile()
    return parse_key_file(path.read_text(encoding="utf-8"), path.name)


@contextmanager
def editing(path: Path) -> Iterator[list[KeyEntry]]:
    """The file's entries under an exclusive lock; written back (hashes only) when the block
    changed them and ended without an error. A malformed file is refused, never overwritten."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path.with_name(path.name + ".lock"), "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        before = read_keys(path).keys
        entries = list(before)
        yield entries
        if entries != before:
            hashed = [e.model_copy(update={"key": None, "key_sha256": e.digest}) for e in entries]
            _write_atomically(
                path, KeyFile(keys=hashed).model_dump_json(indent=2, exclude_none=True)
            )


def _write_atomically(path: Path, text: str) -> None:
    handle, temporary = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(handle, "w", encoding="utf-8") as out:  # mkstemp: mode 0600
            out.write(text + "\n")
            out.flush()
            os.fsync(out.fileno())
        os.replace(temporary, path)
    except BaseException:
        with suppress(FileNotFoundError):
            os.unlink(temporary)
        raise


def _checked(name: str, namespaces: Iterable[str]) -> None:
    if not NAME_PATTERN.match(name):
        raise ValueError(f"key name '{name}': letters, digits and _ . @ - (at most 64)")
    for namespace in namespaces:
        if not NAMESPACE_PATTERN.match(namespace):
            raise ValueError(f"namespace '{namespace}': lowercase letters, digits, _ and -, or *")


def create_key(
    path: Path,
    name: str,
    read: Iterable[str],
    write: Iterable[str] = (),
    *,
    if_missing: bool = False,
) -> str | None:
    """A new key named `name` that reads `read` and `write` and writes `write`; returned once,
    stored as its hash. None with `if_missing` when the name exists (else KeyExists)."""
    writes = sorted(set(write))
    reads = sorted(set(read) | set(writes))
    _checked(name, reads)
    if not reads:
        raise ValueError("a key needs at least one namespace (--read or --write)")
    with editing(path) as entries:
        if any(entry.principal == name for entry in entries):
            if if_missing:
                return None
            raise KeyExists(f"a key named '{name}' exists; `corpus keys rotate {name}` replaces it")
        key = new_key()
        entries.append(
            KeyEntry(
                key_sha256=hash_key(key),
                principal=name,
                namespaces=reads,
                write_namespaces=writes,
                created_at=datetime.now(UTC).replace(microsecond=0),
            )
        )
    return key


def revoke_key(path: Path, name: str) -> None:
    """Remove every key named `name` (KeyNotFound when there is none)."""
    with editing(path) as entries:
        kept = [entry for entry in entries if entry.principal != name]
        if len(kept) == len(entries):
            raise KeyNotFound(f"no key named '{name}'")
        entries[:] = kept
    KeyUsage(usage_path(path)).forget(name)


def rotate_key(path: Path, name: str) -> str:
    """A new key for `name` with the same namespaces; the old one stops working. Returned once."""
    with editing(path) as entries:
        found = [i for i, entry in enumerate(entries) if entry.principal == name]
        if not found:
            raise KeyNotFound(f"no key named '{name}'")
        if len(found) > 1:
            raise ValueError(f"{len(found)} keys are named '{name}': revoke them and create one")
        key = new_key()
        entries[found[0]] = entries[found[0]].model_copy(
            update={
                "key": None,
                "key_sha256": hash_key(key),
                "created_at": datetime.now(UTC).replace(microsecond=0),
            }
        )
    KeyUsage(usage_path(path)).forget(name)
    return key


def list_keys(path: Path) -> list[KeyInfo]:
    used = KeyUsage(usage_path(path)).read()
    return [
        KeyInfo(
            name=entry.principal,
            namespaces=tuple(entry.namespaces),
            write_namespaces=tuple(entry.write_namespaces),
            created_at=entry.created_at,
            last_used=used.get(entry.principal),
        )
        for entry in read_keys(path).keys
    ]


# -- a presented key: one function for every service, and one answer ---------------------------


def principal_for_authorization(
    resolver: KeyResolver,
    authorization: str | None,
    x_api_key: str | None = None,
    *,
    what: str,
    client: str | None = None,
) -> Principal:
    """The principal of the key a caller presents, for every service alike (the upload API, the
    HTTP query API, MCP over HTTP and over stdio): `Authorization: Bearer <key>`, else the
    `X-API-Key` value (MCP over stdio presents CORPUS_API_KEY there). Raises AccessDenied —
    `status` 401 for no key or an unknown one, 503 without a usable key file — after logging
    the refusal once: the client's address, `what` was asked (e.g. "GET /v1/documents"), why;
    never the key."""
    return resolver.principal(api_key_from(authorization, x_api_key), what, client)


# -- HTTP: one dependency and one answer for both FastAPI apps and the MCP endpoint ------------


def install(app: FastAPI, resolver: KeyResolver) -> None:
    """Routes depending on `require_principal` resolve keys with `resolver`; refusals answer
    `{"detail", "field": "authorization"}` with 401 or 503."""
    app.state.keys = resolver

    async def handler(_: Request, exc: Exception) -> JSONResponse:
        assert isinstance(exc, AccessDenied)
        return denied_response(exc)

    app.add_exception_handler(AccessDenied, handler)


def denied_response(exc: AccessDenied) -> JSONResponse:
    headers = {"WWW-Authenticate": "Bearer"} if exc.status == 401 else {}
    return JSONResponse(
        status_code=exc.status,
        content={"detail": exc.detail, "field": "authorization"},
        headers=headers,
    )


async def require_principal(
    request: Request,
    bearer: Annotated[HTTPAuthorizationCredentials | None, Security(BEARER)],
    x_api_key: Annotated[str | None, Security(API_KEY)],
) -> Principal:
    """The request's principal (FastAPI dependency of every keyed route).

    The two security schemes declare how a key is presented, so the OpenAPI document lists
    them on every keyed route and Swagger UI can authorise; neither refuses anything itself
    (`auto_error=False`). The key is taken from the raw headers by `api_key_from`, the rule
    MCP applies too, so both surfaces read a malformed header (`Bearer` with a blank key
    beside an `X-API-Key`, say) alike."""
    del bearer, x_api_key  # parsed by FastAPI for the schemes; `api_key_from` decides
    resolved = request.scope.get("state", {}).get(STATE_PRINCIPAL)
    if isinstance(resolved, Principal):  # by `guard.RequestGuard`, before the body was read
        return resolved
    resolver: KeyResolver = request.app.state.keys
    return principal_for_authorization(
        resolver,
        request.headers.get("authorization"),
        request.headers.get("x-api-key"),
        what=f"{request.method} {request.url.path}",
        client=request.client.host if request.client else None,
    )
