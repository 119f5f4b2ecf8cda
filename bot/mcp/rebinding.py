"""`/mcp`'s guard against DNS rebinding: the mcp SDK's `TransportSecuritySettings`, from Parley's settings.

MCP's transport spec says a server MUST check `Origin`. Otherwise a page whose name an attacker
points at 127.0.0.1 can reach it from the browser. The SDK answers a `Host` not allowed with
421, and an `Origin` not allowed with 403. A request without `Origin` is unaffected, as every
non-browser client sends.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Iterable

from mcp.server.transport_security import TransportSecuritySettings

LOOPBACK_HOSTS = ("127.0.0.1", "localhost", "[::1]")
WILDCARD_BINDS = ("", "0.0.0.0", "::", "[::]")


def is_loopback(bind: str) -> bool:
    """Whether `bind` (`parley serve --host`) listens on this machine only."""
    name = bind.strip("[]")
    if name == "localhost":
        return True
    try:
        return ipaddress.ip_address(name).is_loopback
    except ValueError:
        return False


def default_hosts(bind: str) -> list[str]:
    """The `Host` names `/mcp` answers when `PARLEY_ALLOWED_HOSTS` is unset.

    These are the loopback names, plus `bind` itself when it is one address or name. A wildcard such
    as 0.0.0.0 adds none. The names clients use for it are the operator's to list.
    """
    hosts = list(LOOPBACK_HOSTS)
    if bind not in WILDCARD_BINDS and not is_loopback(bind):
        hosts.append(_bracketed(bind))
    return hosts


def _bracketed(host: str) -> str:
    """An IPv6 address as a `Host` header has it (`[::1]`), else as is."""
    return f"[{host}]" if host.count(":") > 1 and not host.startswith("[") else host


def _with_port(host: str) -> bool:
    return "]:" in host if host.startswith("[") else ":" in host


def transport_security(hosts: Iterable[str], origins: Iterable[str]) -> TransportSecuritySettings:
    """The SDK's settings: each host name on any port, and exactly the given origins.

    A `host:port` entry allows that port only. Origins are `scheme://host[:port]`, with the SDK's
    `http://host:*` for any port.
    """
    allowed: list[str] = []
    for entry in hosts:
        name = _bracketed(entry.strip().lower())
        allowed += [name] if _with_port(name) else [name, f"{name}:*"]
    return TransportSecuritySettings(
        enable_dns_rebinding_protection=True,
        allowed_hosts=allowed,
        allowed_origins=[o.strip().rstrip("/") for o in origins],
    )
