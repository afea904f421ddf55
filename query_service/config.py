"""Query-service settings (`CORPUS_*` environment variables, like the pipeline's)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

from pydantic import Field, SecretStr, field_validator
from pydantic_settings import BaseSettings, NoDecode, SettingsConfigDict

from corpus_pipeline.common.settings import HomeLayout, HomePath


class ServiceSettings(HomeLayout, BaseSettings):
    model_config = SettingsConfigDict(env_prefix="CORPUS_", env_file=".env", extra="ignore")

    home: HomePath = Field(
        default=Path("data/runtime"), description="Same CORPUS_HOME as the pipeline."
    )
    api_keys_file: Path | None = Field(
        default=None,
        description="JSON file of API keys (`corpus keys`); default <home>/service/api_keys.json.",
    )
    open_access: bool = Field(
        default=False,
        description="Serve the local user without a key while there are no keys (loopback only).",
    )
    service_workers: int = Field(
        default=4, ge=1, le=64, description="Threads for blocking search work."
    )
    reload_seconds: float = Field(
        default=1.0, gt=0, description="How often new revisions are looked for."
    )
    object_store_url: str = Field(
        default="",
        description=(
            "The pipeline's CORPUS_OBJECT_STORE_URL. An s3:// store makes this process a replica: "
            "it pulls each published revision from <store>/published to <home>/published."
        ),
    )
    mirror_poll_seconds: float = Field(
        default=5.0, gt=0, description="How often a replica looks for a new revision in the store."
    )
    query_max_body_kb: int = Field(
        default=1024,
        ge=1,
        description=(
            "The largest request body the query service reads (KiB), checked from "
            "Content-Length before the body and while it streams (413 past it); after the key."
        ),
    )
    cache_max_entries: int = Field(default=2048, ge=0)
    cache_max_bytes: int = Field(default=64 * 1024 * 1024, ge=0)
    access_prior_weight: float = Field(
        default=0.0, ge=0, description="Ranking prior from access statistics; 0 = off."
    )
    stats_flush_seconds: float = Field(default=1.0, gt=0)
    mcp_allowed_hosts: Annotated[list[str], NoDecode] = Field(
        default_factory=lambda: ["localhost", "127.0.0.1", "[::1]"],
        description=(
            "Host names (optionally `name:port`) the MCP endpoint answers to, comma-separated: "
            "the names agents reach the service by (a compose service, a Kubernetes Service, a "
            "proxy's name). A name without a port matches any port. Browser origins on the same "
            "names are allowed; `*` turns the check off (only behind a proxy that checks Host). "
            "Any other Host gets 421 (DNS rebinding protection)."
        ),
    )
    # Agentic planner model (any OpenAI-compatible endpoint); empty = the rule-based planner.
    planner_model: str = ""
    # Model that chooses which sections to open in agentic navigation; empty = deterministic scoring.
    navigator_model: str = ""
    llm_base_url: str = ""
    llm_api_keys: SecretStr = Field(
        default=SecretStr(""), description="Comma-separated; rotated per rate limit."
    )
    llm_requests_per_minute: int = Field(default=60, ge=1)
    llm_timeout_seconds: float = Field(default=20.0, gt=0)

    mcp_allowed_origins: Annotated[list[str], NoDecode] = Field(
        default_factory=list,
        description=(
            "Browser origins (`scheme://host[:port]`, `:*` for any port) allowed to call the MCP "
            "endpoint besides those on CORPUS_MCP_ALLOWED_HOSTS, comma-separated (a web agent "
            "served from another name). Any other Origin gets 403."
        ),
    )

    @field_validator("mcp_allowed_hosts", "mcp_allowed_origins", mode="before")
    @classmethod
    def _host_list(cls, value: Any) -> Any:
        if isinstance(value, str):
            return [h.strip() for h in value.split(",") if h.strip()]
        return value

    @field_validator("mcp_allowed_hosts")
    @classmethod
    def _hosts_named(cls, value: list[str]) -> list[str]:
        if not value:
            raise ValueError("name at least one host (or `*`)")
        bad = [h for h in value if h != "*" and ("/" in h or " " in h or h.startswith(":"))]
        if bad:
            raise ValueError(f"not a host name or host:port: {bad}")
        return value

    @field_validator("mcp_allowed_origins")
    @classmethod
    def _origins(cls, value: list[str]) -> list[str]:
        bad = [o for o in value if not o.startswith(("http://", "https://")) or " " in o]
        if bad:
            raise ValueError(f"not an origin (scheme://host[:port]): {bad}")
        return value
