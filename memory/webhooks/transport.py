"""One POST to a receiver, refusing addresses inside the organisation's network.

The address is checked where the socket connects, not only when the URL is saved: a name that
resolved to a public address at save time and to 10.0.0.5 now (DNS rebinding) is refused here.
Redirects are never followed (http.client does not follow them), and every send has a timeout.
"""

import http.client
import ipaddress
import socket
import ssl
from dataclasses import dataclass
from urllib.parse import urlsplit

from django.conf import settings

TIMEOUT_SECONDS = 5
MAX_RESPONSE_BYTES = 4096


class AddressRefused(Exception):
    """The URL's host is (or resolves to) an address webhooks may not reach."""


@dataclass(frozen=True)
class Answer:
    status: int | None  # None: no HTTP answer (refused, timed out, address not allowed)
    error: str = ""

    @property
    def ok(self):
        return self.status is not None and 200 <= self.status < 300


def address_problem(ip):
    """Why webhooks may not reach `ip` (an ipaddress object), or "" when they may."""
    if getattr(settings, "WEBHOOKS_ALLOW_PRIVATE", False):
        return ""
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped:
        ip = ip.ipv4_mapped
    if ip.is_loopback:
        return "" if settings.DEBUG else "is a loopback address"
    if ip.is_link_local:
        return "is a link-local address"
    if ip.is_private:
        return "is on a private network"
    if ip.is_multicast or ip.is_reserved or ip.is_unspecified or not ip.is_global:
        return "is not a public address"
    return ""


def check_host(host, port):
    """Resolve `host` and refuse it when any of its addresses may not be reached; returns them."""
    try:
        literal = ipaddress.ip_address(host.strip("[]"))
    except ValueError:
        literal = None
    if literal is not None:
        infos = [(socket.AF_INET6 if literal.version == 6 else socket.AF_INET, str(literal))]
    else:
        try:
            found = socket.getaddrinfo(host, port, proto=socket.IPPROTO_TCP)
        except socket.gaierror as exc:
            raise OSError(f"cannot resolve {host}: {exc.strerror}") from None
        infos = [(family, sockaddr[0]) for family, _, _, _, sockaddr in found]
    for _, address in infos:
        problem = address_problem(ipaddress.ip_address(address.split("%")[0]))
        if problem:
            raise AddressRefused(f"{host} ({address}) {problem}; webhooks are not sent there")
    return infos


def url_problem(url):
    """Why `url` cannot be a webhook endpoint, checked when it is saved ("" when it can)."""
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError:
        return "is not a valid URL"
    if parts.scheme not in ("http", "https"):
        return "must start with https://"
    if parts.scheme == "http" and not (settings.DEBUG or getattr(settings, "WEBHOOKS_ALLOW_PRIVATE", False)):
        return "must use https:// (events may carry what a team's agents learned)"
    if not parts.hostname:
        return "has no host"
    if parts.username or parts.password:
        return "must not carry a user name or password (the signature proves who sent it)"
    try:
        check_host(parts.hostname, port or (443 if parts.scheme == "https" else 80))
    except AddressRefused as exc:
        return str(exc)
    except OSError:
        return ""  # a name that does not resolve here may resolve where the worker runs; checked at send
    return ""


class _CheckedConnection(http.client.HTTPConnection):
    def connect(self):
        self.sock = _connect_checked(self.host, self.port, self.timeout)


class _CheckedTLSConnection(http.client.HTTPSConnection):
    def connect(self):
        sock = _connect_checked(self.host, self.port, self.timeout)
        self.sock = self._context.wrap_socket(sock, server_hostname=self.host)


def _connect_checked(host, port, timeout):
    last_error = None
    for family, address in check_host(host, port):
        sock = socket.socket(family, socket.SOCK_STREAM)
        sock.settimeout(timeout)
        try:
            sock.connect((address, port))
        except OSError as exc:
            sock.close()
            last_error = exc
            continue
        # What the socket reached is what was checked (no proxy or second lookup in between).
        peer = ipaddress.ip_address(sock.getpeername()[0].split("%")[0])
        problem = address_problem(peer)
        if problem:
            sock.close()
            raise AddressRefused(f"{host} ({peer}) {problem}; webhooks are not sent there")
        return sock
    raise last_error or OSError(f"cannot connect to {host}")


def post(url, body, headers, *, timeout=TIMEOUT_SECONDS):
    """POST `body` (bytes) to `url`; the receiver's status code, or why there was none."""
    parts = urlsplit(url)
    path = parts.path or "/"
    if parts.query:
        path += "?" + parts.query
    if parts.scheme == "https":
        connection = _CheckedTLSConnection(
            parts.hostname, parts.port or 443, timeout=timeout, context=ssl.create_default_context()
        )
    else:
        connection = _CheckedConnection(parts.hostname, parts.port or 80, timeout=timeout)
    try:
        connection.request("POST", path, body=body, headers=headers)
        response = connection.getresponse()
        response.read(MAX_RESPONSE_BYTES)
        return Answer(response.status)
    except AddressRefused as exc:
        return Answer(None, str(exc))
    except TimeoutError:
        return Answer(None, f"no answer within {timeout} s")
    except (OSError, http.client.HTTPException) as exc:
        return Answer(None, f"{type(exc).__name__}: {exc}"[:400])
    finally:
        connection.close()
