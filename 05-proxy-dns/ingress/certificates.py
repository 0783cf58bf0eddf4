"""TLS termination: the certificate for each host, from the Secrets the Ingresses name.

An Ingress's `tls` section says: for these hosts, present the certificate in
this Secret (type kubernetes.io/tls, keys tls.crt and tls.key, PEM). The
client says which host it wants before any HTTP is sent, in the TLS
handshake itself (SNI, the server_name extension); the handshake then picks
that host's certificate. A host with no usable Secret gets the controller's
own self-signed certificate, as ingress-nginx does with its "Fake
Certificate", so that a mistake shows as a browser warning and a log line,
not as a port that stopped answering.
"""
from __future__ import annotations

import base64
import datetime
import os
import ssl
import tempfile
import threading
from dataclasses import dataclass

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from ingress.match import wildcard_of

TLS_SECRET_TYPE = "kubernetes.io/tls"
DEFAULT_NAME = "Groundup Ingress Controller Fake Certificate"


@dataclass(frozen=True)
class Loaded:
    context: ssl.SSLContext | None
    problem: str = ""


def self_signed(common_name: str = DEFAULT_NAME) -> tuple[bytes, bytes]:
    """A certificate and key (PEM) for hosts without one of their own."""
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common_name)])
    now = datetime.datetime.now(datetime.timezone.utc)
    cert = (x509.CertificateBuilder().subject_name(name).issuer_name(name).public_key(key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(minutes=5))
            .not_valid_after(now + datetime.timedelta(days=365))
            .add_extension(x509.SubjectAlternativeName([x509.DNSName("ingress.local")]), critical=False)
            .sign(key, hashes.SHA256()))
    return (cert.public_bytes(serialization.Encoding.PEM),
            key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                              serialization.NoEncryption()))


def server_context(cert_pem: bytes, key_pem: bytes) -> ssl.SSLContext:
    """An SSLContext holding one certificate. The ssl module reads
    certificates only from files: they live for a moment in a private
    temporary directory."""
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.minimum_version = ssl.TLSVersion.TLSv1_2
    with tempfile.TemporaryDirectory(prefix="ingress-tls-") as folder:   # mode 0700
        cert_file, key_file = os.path.join(folder, "tls.crt"), os.path.join(folder, "tls.key")
        for path, data in ((cert_file, cert_pem), (key_file, key_pem)):
            with open(os.open(path, os.O_WRONLY | os.O_CREAT, 0o600), "wb") as file:
                file.write(data)
        context.load_cert_chain(cert_file, key_file)
    return context


def load_secret(secret: dict | None, key: str) -> Loaded:
    """A Secret as an SSLContext, or why it cannot be one."""
    if secret is None:
        return Loaded(None, f'secret "{key}" not found')
    if secret.get("type") != TLS_SECRET_TYPE:
        return Loaded(None, f'secret "{key}" is of type {secret.get("type") or "Opaque"}, not {TLS_SECRET_TYPE}')
    data = secret.get("data") or {}
    try:
        cert, private_key = (base64.b64decode(data.get(k) or "") for k in ("tls.crt", "tls.key"))
        return Loaded(server_context(cert, private_key))
    except (ValueError, ssl.SSLError, OSError) as error:
        return Loaded(None, f'secret "{key}": tls.crt and tls.key are not a PEM certificate and its key ({error})')


# [START sni]
class Certificates:
    """Host -> certificate, kept current from the routing table's TLS hosts;
    the handshake asks it through the SNI callback."""

    def __init__(self, log=None):
        self.log = log
        self.default = server_context(*self_signed())
        self.default.sni_callback = self._pick
        self._by_host: dict[str, ssl.SSLContext] = {}
        self._loaded: dict[tuple[str, str], Loaded] = {}      # (secret key, resourceVersion) -> loaded
        self._lock = threading.Lock()

    def update(self, tls_hosts: dict[str, str], secret_of) -> None:
        """tls_hosts: host -> "namespace/name"; secret_of(namespace, name) -> the cached Secret."""
        by_host, loaded = {}, {}
        for host, key in tls_hosts.items():
            secret = secret_of(*key.split("/", 1))
            version = (key, ((secret or {}).get("metadata") or {}).get("resourceVersion") or "")
            if version not in loaded:
                loaded[version] = self._loaded.get(version) or load_secret(secret, key)
                if loaded[version].problem and version not in self._loaded and self.log:
                    self.log.warning("default certificate used", host=host, reason=loaded[version].problem)
            if loaded[version].context is not None:
                by_host[host] = loaded[version].context
        with self._lock:
            self._by_host, self._loaded = by_host, loaded

    def for_host(self, host: str | None) -> ssl.SSLContext:
        with self._lock:
            if host:
                found = self._by_host.get(host.lower()) or self._by_host.get(wildcard_of(host.lower()) or "")
                if found:
                    return found
        return self.default

    def _pick(self, connection: ssl.SSLSocket, server_name: str | None, _context) -> None:
        connection.context = self.for_host(server_name)
# [END sni]
