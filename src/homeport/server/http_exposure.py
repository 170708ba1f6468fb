"""Who can reach an HTTP server: checked once at start, before the port is bound.

A server reachable beyond loopback (a non-loopback `--host`, or a `--public-url` naming another
machine) must require tokens unless the operator says otherwise, and no server may serve a whole
tree of other people's directories (`/`, the home directory, a system directory). The Host and
Origin values `/mcp` accepts are loopback plus the `--public-url`s, so a DNS-rebinding page can
name neither.
"""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass
from urllib.parse import urlsplit

from mcp.server.transport_security import TransportSecuritySettings

from homeport.core.settings import ServeSettings
from homeport.errors import ConfigError
from homeport.workspace import WorkspaceGuard

__all__ = ["PublicUrl", "check_exposure", "is_loopback", "parse_public_url", "resource_base", "transport_security"]

_LOOPBACK_HOSTS = ["127.0.0.1:*", "localhost:*", "[::1]:*"]
_LOOPBACK_ORIGINS = ["http://127.0.0.1:*", "http://localhost:*", "http://[::1]:*"]
_WILDCARD_BINDS = ("0.0.0.0", "::", "")


@dataclass(frozen=True)
class PublicUrl:
    """`--public-url`: the scheme, host and port a client uses to reach this server."""

    scheme: str
    host: str  # as it appears in a Host header: brackets around IPv6
    port: int | None

    @property
    def netloc(self) -> str:
        return self.host if self.port is None else f"{self.host}:{self.port}"

    @property
    def origin(self) -> str:
        return f"{self.scheme}://{self.netloc}"


def parse_public_url(url: str) -> PublicUrl:
    """`https://mem.example.com` -> PublicUrl; only scheme, host and an optional port are allowed.

    Raises:
        ConfigError: not an http(s) URL with a host, or it carries a path, query or credentials.
    """
    try:
        parts = urlsplit(url.strip())
        port = parts.port
    except ValueError as exc:
        raise ConfigError(f"--public-url {url!r} is not a URL ({exc}); pass e.g. https://mem.example.com") from None
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ConfigError(f"--public-url {url!r} needs http:// or https:// and a host, e.g. https://mem.example.com")
    if parts.path not in ("", "/") or parts.query or parts.fragment or parts.username or parts.password:
        raise ConfigError(
            f"--public-url {url!r} must be scheme://host[:port] only; MCP is always served at /mcp below it"
        )
    host = parts.hostname.lower()
    return PublicUrl(parts.scheme, f"[{host}]" if ":" in host else host, port)


def is_loopback(host: str) -> bool:
    """Whether a bind address or host name stays on this machine."""
    name = host.strip("[]").lower()
    if name == "localhost":
        return True
    try:
        return ipaddress.ip_address(name).is_loopback
    except ValueError:
        return False


def check_exposure(settings: ServeSettings, guard: WorkspaceGuard) -> None:
    """Refuse an HTTP server that would be open to other machines without tokens, or serve a denied tree.

    Raises:
        ConfigError: naming the flag that makes the start safe.
    """
    remote = [] if is_loopback(settings.host) else [f"--host {settings.host}"]
    remote += [f"--public-url {u}" for u in settings.public_urls if not is_loopback(parse_public_url(u).host)]
    if remote and not settings.auth and not settings.insecure_no_auth:
        raise ConfigError(
            f"{remote[0]} lets other machines reach this server, so it needs tokens: pass --auth (mint one per "
            "agent with `homeport tokens add AGENT`), or --insecure-no-auth to serve without them on a network "
            "you trust"
        )
    for root in guard.allow_roots:
        why = guard.denied.reason(root)
        if why is not None:
            raise ConfigError(
                f"refusing to serve every workspace under {root} ({why}): that would expose directories that are "
                "not projects. Pass --allow-root DIR naming the directory that holds your projects "
                "(for example --allow-root ~/src), or start the server there"
            )


def transport_security(settings: ServeSettings) -> TransportSecuritySettings:
    """Host and Origin values `/mcp` accepts: loopback, the bind address if it is a specific one, the public URLs."""
    hosts, origins = list(_LOOPBACK_HOSTS), list(_LOOPBACK_ORIGINS)
    if not is_loopback(settings.host) and settings.host not in _WILDCARD_BINDS:
        bound = f"[{settings.host}]" if ":" in settings.host else settings.host
        hosts.append(f"{bound}:*")
        origins.append(f"http://{bound}:*")
    for url in map(parse_public_url, settings.public_urls):
        # A URL without a port is reached on the scheme's default one, and clients then send no port.
        hosts += [url.netloc] if url.port is not None else [url.host, f"{url.host}:*"]
        origins.append(url.origin)
    return TransportSecuritySettings(enable_dns_rebinding_protection=True, allowed_hosts=hosts, allowed_origins=origins)


def resource_base(settings: ServeSettings, port: int) -> str:
    """The URL the auth metadata names this server by: the first --public-url, else the bound address."""
    if settings.public_urls:
        return parse_public_url(settings.public_urls[0]).origin
    host = "127.0.0.1" if settings.host in _WILDCARD_BINDS else settings.host
    return f"http://{'[' + host + ']' if ':' in host else host}:{port}"
