"""The client address behind trusted reverse proxies, for per-address rate limits (``ldp serve --trusted-proxy``).

A forwarded header is believed only when the connection comes from a proxy
the operator named: otherwise any client could write one and pick a fresh
rate-limit bucket per request. :class:`TrustedProxies` reads
``X-Forwarded-For`` from right to left, skipping the addresses of trusted
proxies, and takes the first address that is not one: the client as the
outermost trusted proxy saw it (entries further left were written by the
client or by proxies nobody vouches for). With no trusted proxy the socket's
peer address is used and the header is never read.

The address is used in memory only (the rate limiter's buckets); it is never
stored or logged.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Iterable

from ldp.errors import ParameterError

__all__ = ["TrustedProxies", "parse_networks"]

Network = ipaddress.IPv4Network | ipaddress.IPv6Network
Address = ipaddress.IPv4Address | ipaddress.IPv6Address

#: The most ``X-Forwarded-For`` entries read (a longer header is read from its right end only).
MAX_HOPS = 16


def parse_networks(texts: Iterable[str]) -> tuple[Network, ...]:
    """The networks ``texts`` name (``10.0.0.0/8``, ``127.0.0.1``, ``::1``); a one-line error for a bad one."""
    networks = []
    for text in texts:
        try:
            networks.append(ipaddress.ip_network(text.strip(), strict=False))
        except ValueError:
            raise ParameterError(
                f"trusted proxy {text!r} is not an address or network: give e.g. 127.0.0.1, 10.0.0.0/8 or ::1"
            ) from None
    return tuple(networks)


def _address(text: str) -> Address | None:
    text = text.strip()
    if text.startswith("[") and "]" in text:  # [v6]:port
        text = text[1 : text.index("]")]
    elif text.count(":") == 1:  # v4:port
        text = text.partition(":")[0]
    try:
        address = ipaddress.ip_address(text)
    except ValueError:
        return None
    mapped = getattr(address, "ipv4_mapped", None)
    return mapped if mapped is not None else address


class TrustedProxies:
    """Which peers may say whom they forward for.

    Parameters
    ----------
    networks : iterable of str
        Addresses or CIDR networks of the trusted proxies (empty: trust none).
    """

    def __init__(self, networks: Iterable[str] = ()) -> None:
        self.networks = parse_networks(networks)

    def trusts(self, address: Address | None) -> bool:
        return address is not None and any(address in network for network in self.networks)

    def client(self, peer: str, forwarded_for: str | None) -> str:
        """The address to rate-limit: ``peer``, or the client a trusted ``peer`` forwarded for."""
        if not self.networks or not forwarded_for or not self.trusts(_address(peer)):
            return peer
        hops = forwarded_for.split(",")[-MAX_HOPS:]
        nearest = peer
        for text in reversed(hops):
            address = _address(text)
            if address is None:  # garbage in the header: stop at the last hop vouched for
                return nearest
            if not self.trusts(address):
                return str(address)
            nearest = str(address)
        return nearest
