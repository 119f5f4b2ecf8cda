"""Where a webhook may go: the check of every callback URL, and the address it pins.

A callback URL must be http(s), and its host must resolve only to global addresses. An IPv6
address carrying a refused IPv4 address is refused too. Otherwise it must match a
`PARLEY_WEBHOOK_ALLOW` entry, host and port. The address checked is the one connected to.
"""

from __future__ import annotations

import fnmatch
import ipaddress
import socket
from urllib.parse import urlsplit, urlunsplit

import httpx

from workers.questions.exceptions import QuestionError

WEB_PORTS = frozenset({80, 443})
"""The ports an allow entry without a port admits."""
LAST_32_BITS = tuple(
    ipaddress.IPv6Network(net)
    for net in (
        "::/96",  # IPv4-compatible (RFC 4291, deprecated)
        "::ffff:0:0:0/96",  # IPv4-translated (SIIT, RFC 2765)
        "64:ff9b::/96",  # NAT64's well-known prefix (RFC 6052)
    )
)
"""IPv6 prefixes whose last 32 bits are an IPv4 address (IPv4-mapped, 6to4 and Teredo have properties)."""
NAT64_LOCAL = ipaddress.IPv6Network("64:ff9b:1::/48")
ISATAP = (bytes.fromhex("00005efe"), bytes.fromhex("02005efe"))
"""ISATAP interface identifiers (RFC 5214): the IPv4 address of the tunnel's end follows them."""


class DestinationRefused(QuestionError):
    """A callback URL Parley will not call.

    It is not http(s), has no host, or has a private address not allowed.
    """


def check_destination(url: str, allow: tuple[str, ...], loopback: bool = False) -> str | None:
    """Refuse a callback URL that may reach an internal address.

    A URL is refused if not http(s). It is also refused if its host resolves to an internal address.
    That is loopback, link-local, private or otherwise internal, or an IPv6 address embedding one. A
    host and port matching a `PARLEY_WEBHOOK_ALLOW` entry pass anyway. With entries set, only
    matching hosts are reached at all. `loopback` (the playground's) also admits this machine on any
    port.

    Returns the address that was checked, which a delivery then connects to (`pinned`). For a host
    an operator allowed by name it returns None. Such a host is connected to by name.
    """
    try:
        parts = urlsplit(url)
        if parts.scheme not in ("http", "https"):
            raise DestinationRefused("callback_url must be an http or https URL")
        host = (parts.hostname or "").lower()
        port = parts.port or (443 if parts.scheme == "https" else 80)
    except ValueError as exc:  # a port out of range or not a number, a bracket left open
        raise DestinationRefused(f"callback_url is not a valid URL: {exc}") from None
    if not host:
        raise DestinationRefused("callback_url has no host")
    if not _client_agrees(url, host, port):
        raise DestinationRefused("callback_url is ambiguous: its host or port reads differently to the HTTP client")
    if any(allows(entry, host, port) for entry in allow):
        return None
    if allow and not loopback:
        raise _not_allowed(host, port)
    try:
        infos = socket.getaddrinfo(host, port)
    except (socket.gaierror, UnicodeError):
        raise DestinationRefused(f"callback_url host {host!r} does not resolve") from None
    addresses = [ipaddress.ip_address(str(info[4][0]).split("%")[0]) for info in infos]
    if loopback and all(a.is_loopback for a in addresses):
        return str(addresses[0])
    if allow:  # entries set, and not this machine: only they are reached
        raise _not_allowed(host, port)
    for address in addresses:
        if refused_address(address):
            raise DestinationRefused(
                f"callback_url host {host!r} is a private, loopback or link-local address ({address}); "
                f"allow it with PARLEY_WEBHOOK_ALLOW={allow_entry(host, port)} and restart Parley"
            )
    return str(addresses[0])


def _not_allowed(host: str, port: int) -> DestinationRefused:
    return DestinationRefused(
        f"callback_url host {host!r} port {port} is not in PARLEY_WEBHOOK_ALLOW; "
        f"add {allow_entry(host, port)} to it and restart Parley"
    )


def _client_agrees(url: str, host: str, port: int) -> bool:
    """Whether httpx reads the same host and port as this check did.

    httpx sends the request. A URL two parsers read differently could pass the check for one host
    and reach another.
    """
    try:
        parsed = httpx.URL(url)
    except httpx.InvalidURL:
        return False
    theirs = parsed.raw_host.decode("ascii", "replace").lower().strip("[]")
    return theirs == host and (parsed.port or port) == port


def allow_entry(host: str, port: int) -> str:
    """The `PARLEY_WEBHOOK_ALLOW` entry admitting just `host` on `port`, as errors suggest."""
    name = f"[{host}]" if ":" in host else host
    return name if port in WEB_PORTS else f"{name}:{port}"


def allows(entry: str, host: str, port: int) -> bool:
    """Whether one `PARLEY_WEBHOOK_ALLOW` entry admits `host` on `port`.

    - `pattern` (fnmatch) admits the web's ports 80 and 443 only.
    - `pattern:port` admits that one port.
    - `pattern:*` admits any port.
    An IPv6 address is written in brackets (`[fd00::7]:8443`).
    """
    entry = entry.strip().lower()
    pattern = entry
    ports: frozenset[int] | None = WEB_PORTS
    if entry.startswith("["):
        pattern, _, rest = entry[1:].partition("]")
        ports = _ports(rest.removeprefix(":")) if rest else WEB_PORTS
    elif entry.count(":") == 1:
        pattern, _, given = entry.partition(":")
        ports = _ports(given)
    return bool(pattern) and fnmatch.fnmatch(host.strip("[]"), pattern) and (ports is None or port in ports)


def _ports(given: str) -> frozenset[int] | None:
    """The ports an entry's `:port` admits.

    None for `*` (any), nothing for what is not a port.
    """
    if given == "*":
        return None
    return frozenset({int(given)}) if given.isdigit() and 0 < int(given) < 65536 else frozenset()


def refused_address(address: ipaddress.IPv4Address | ipaddress.IPv6Address) -> bool:
    """Whether a webhook may not go to `address`.

    Refused are addresses not global, multicast ones, and some IPv6 addresses. These carry a refused
    IPv4 address: IPv4-mapped and -compatible, NAT64, 6to4, Teredo. A translating network would
    deliver to that IPv4 address.
    """
    if not address.is_global or address.is_multicast:
        return True
    if isinstance(address, ipaddress.IPv4Address):
        return False
    if address in NAT64_LOCAL:  # RFC 8215: the IPv4 address sits where the operator chose
        return True
    return any(refused_address(inner) for inner in embedded_ipv4(address))


def embedded_ipv4(address: ipaddress.IPv6Address) -> list[ipaddress.IPv4Address]:
    """Every IPv4 address an IPv6 address carries by a standard translation or tunnel."""
    found = [a for a in (address.ipv4_mapped, address.sixtofour) if a is not None]
    if address.teredo is not None:
        found.extend(address.teredo)  # the Teredo server and the client behind it
    if any(address in net for net in LAST_32_BITS) or address.packed[8:12] in ISATAP:
        found.append(ipaddress.IPv4Address(address.packed[-4:]))
    return found


def pinned(url: str, address: str | None) -> tuple[str, dict[str, str], dict[str, str]]:
    """The URL, extra headers and httpx extensions that reach `url`'s host at `address`.

    Resolving the host again when connecting could give an unchecked address (DNS rebinding). So the
    delivery connects to the address `check_destination` checked. It still names the host in the
    `Host` header. Over TLS, it is also the SNI name the certificate is verified against. With no
    address (an allowed host) the URL is used as is.
    """
    if address is None:
        return url, {}, {}
    parts = urlsplit(url)
    ip = ipaddress.ip_address(address)
    netloc = f"[{ip}]" if ip.version == 6 else str(ip)
    if parts.port is not None:
        netloc += f":{parts.port}"
    userinfo, _, host_and_port = parts.netloc.rpartition("@")
    if userinfo:
        netloc = f"{userinfo}@{netloc}"
    extensions = {"sni_hostname": parts.hostname or ""} if parts.scheme == "https" else {}
    return urlunsplit(parts._replace(netloc=netloc)), {"host": host_and_port}, extensions


def destination(url: str) -> str:
    """The host and port a checked callback URL reaches.

    Examples are `hooks.example.com:443` and `[fd00::7]:8443`. The per-host in-flight cap and the
    circuit breaker count by this. So two services on one host are two.
    """
    parts = urlsplit(url)
    host = (parts.hostname or "").lower()
    port = parts.port or (443 if parts.scheme == "https" else 80)
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"
