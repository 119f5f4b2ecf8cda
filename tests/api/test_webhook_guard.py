"""The webhook destination guard: IPv6 forms of a refused IPv4 address, and the ports an allow entry admits.

An IPv6 address can carry an IPv4 address (IPv4-mapped or -compatible, NAT64, 6to4, Teredo); a
network that translates it delivers to that IPv4 address, so the guard judges the IPv4 address.
"""

from __future__ import annotations

import re

import pytest

from workers.questions.webhooks import DestinationRefused, check_destination

pytestmark = pytest.mark.unit


@pytest.mark.parametrize(
    "host",
    [
        "::127.0.0.1",  # IPv4-compatible
        "::ffff:127.0.0.1",  # IPv4-mapped
        "::ffff:0:7f00:1",  # IPv4-translated
        "64:ff9b::7f00:1",  # NAT64, well-known prefix: 127.0.0.1
        "64:ff9b::a9fe:a9fe",  # NAT64: 169.254.169.254, the cloud metadata service
        "64:ff9b:1::a00:7",  # NAT64, local-use prefix
        "2002:7f00:1::",  # 6to4 of 127.0.0.1
        "2002:a00:7::1",  # 6to4 of 10.0.0.7
        "2002:c0a8:101::",  # 6to4 of 192.168.1.1
        "2001:0:4136:e378:8000:63bf:80ff:fffe",  # Teredo
        "::a00:7",  # IPv4-compatible 10.0.0.7
        "2606:4700::5efe:7f00:1",  # ISATAP, tunnelled to 127.0.0.1
        "2606:4700::200:5efe:a00:7",  # ISATAP, tunnelled to 10.0.0.7
    ],
)
def test_an_ipv6_form_of_a_refused_ipv4_address_is_refused(host: str) -> None:
    with pytest.raises(DestinationRefused, match="private, loopback or link-local"):
        check_destination(f"http://[{host}]:8080/hook", ())


@pytest.mark.parametrize("host", ["64:ff9b::808:808", "2002:808:808::", "2606:4700:4700::1111"])
def test_an_ipv6_form_of_a_public_ipv4_address_is_reached(host: str) -> None:
    assert check_destination(f"https://[{host}]/hook", ()) == host


def test_an_allow_entry_without_a_port_admits_the_web_ports_only() -> None:
    allow = ("127.0.0.1", "*.corp.internal")
    assert check_destination("http://127.0.0.1/hook", allow) is None
    assert check_destination("https://127.0.0.1/hook", allow) is None
    assert check_destination("http://127.0.0.1:443/hook", allow) is None
    for url in ("http://127.0.0.1:6379/", "http://127.0.0.1:8080/hook", "https://hooks.corp.internal:9200/"):
        with pytest.raises(DestinationRefused, match="not in PARLEY_WEBHOOK_ALLOW"):
            check_destination(url, allow)


def test_an_allow_entry_with_a_port_admits_that_port_only() -> None:
    allow = ("127.0.0.1:8080", "[::1]:8443", "hooks.internal:*")
    assert check_destination("http://127.0.0.1:8080/hook", allow) is None
    assert check_destination("https://[::1]:8443/hook", allow) is None
    assert check_destination("http://hooks.internal:6379/", allow) is None  # `:*`: any port, said explicitly
    for url in ("http://127.0.0.1/hook", "http://127.0.0.1:8081/", "https://[::1]/", "http://[::1]:8080/"):
        with pytest.raises(DestinationRefused, match="not in PARLEY_WEBHOOK_ALLOW"):
            check_destination(url, allow)


@pytest.mark.parametrize("entry", ["127.0.0.1:", "127.0.0.1:http", "127.0.0.1:99999", "127.0.0.1:8o80"])
def test_an_allow_entry_with_a_bad_port_admits_nothing(entry: str) -> None:
    for port in (80, 443, 8080):
        with pytest.raises(DestinationRefused):
            check_destination(f"http://127.0.0.1:{port}/", (entry,))


@pytest.mark.parametrize("url", ["http://hooks.example.com:99999/", "http://hooks.example.com:abc/", "http://[::1/"])
def test_a_malformed_callback_url_is_refused_not_raised(url: str) -> None:
    with pytest.raises(DestinationRefused, match="not a valid URL"):
        check_destination(url, ())


@pytest.mark.parametrize("url", ["http://hooks.internal\u3002evil.example/", "http://hooks.internal\t@evil.example/"])
def test_a_url_the_http_client_reads_differently_is_refused(url: str) -> None:
    # The check would read `hooks.internal…`, which the pattern admits; httpx would reach evil.example.
    with pytest.raises(DestinationRefused, match="ambiguous"):
        check_destination(url, ("hooks.internal*",))


def _suggested(url: str, allow: tuple[str, ...]) -> str:
    """The entry a refusal suggests: the value after `PARLEY_WEBHOOK_ALLOW=`, or after "add"."""
    with pytest.raises(DestinationRefused) as refused:
        check_destination(url, allow)
    message = str(refused.value)
    found = re.search(r"PARLEY_WEBHOOK_ALLOW=(\S+)|; add (\S+) to it", message)
    assert found and message.endswith("and restart Parley"), message
    return found[1] or found[2]


@pytest.mark.parametrize(
    "url",
    ["http://127.0.0.1:16545/hook", "http://localhost:8080/hook", "http://[::1]:9000/h", "https://10.0.0.7/h"],
)
def test_the_entry_an_error_suggests_admits_the_callback_when_applied(url: str) -> None:
    first = _suggested(url, ())  # nothing allowed yet: the loopback or private refusal
    assert check_destination(url, (first,)) is None
    other = _suggested(url, ("hooks.example.com",))  # other entries set: "not in PARLEY_WEBHOOK_ALLOW"
    assert check_destination(url, ("hooks.example.com", other)) is None
