"""Throwaway TLS material for test servers: a CA and a loopback server certificate.

A TLS test is only worth something if the client really verifies the
server, so this makes a private CA, signs a certificate for 127.0.0.1 with
it, and writes both as PEM files a server (`redis-server --tls-port`) and a
client (`?ssl_ca_certs=`) can load. `another_ca` makes a CA that did *not*
sign the server's certificate, to prove verification fails loudly.

Keys are generated fresh in each call (nothing secret is checked in) and
are valid for one day. Needs the `cryptography` package (a dev dependency).
"""

from __future__ import annotations

import datetime
import ipaddress
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from beam_agents.testing.services._process import LOOPBACK

__all__ = ["TestCertificates", "another_ca", "make_certificates"]

_VALIDITY = datetime.timedelta(days=1)
_SKEW = datetime.timedelta(minutes=5)


@dataclass(frozen=True)
class TestCertificates:
    """PEM files: the CA that signed the server certificate, and the server's pair."""

    __test__ = False  # not a pytest test class, whatever its name

    ca_file: Path
    cert_file: Path
    key_file: Path


def _now() -> datetime.datetime:
    return datetime.datetime.now(datetime.UTC)


def _ca(name: str) -> tuple[ec.EllipticCurvePrivateKey, x509.Certificate]:
    key = ec.generate_private_key(ec.SECP256R1())
    subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, name)])
    cert = (
        x509.CertificateBuilder()
        .subject_name(subject)
        .issuer_name(subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(_now() - _SKEW)
        .not_valid_after(_now() + _VALIDITY)
        .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
        .add_extension(
            x509.KeyUsage(
                digital_signature=True,
                content_commitment=False,
                key_encipherment=False,
                data_encipherment=False,
                key_agreement=False,
                key_cert_sign=True,
                crl_sign=True,
                encipher_only=False,
                decipher_only=False,
            ),
            critical=True,
        )
        .sign(key, hashes.SHA256())
    )
    return key, cert


def _pem(cert: x509.Certificate) -> bytes:
    return cert.public_bytes(serialization.Encoding.PEM)


def make_certificates(directory: Path) -> TestCertificates:
    """A fresh CA and a certificate for 127.0.0.1 signed by it, written under `directory`."""
    directory.mkdir(parents=True, exist_ok=True)
    ca_key, ca_cert = _ca("beam-agents test CA")
    key = ec.generate_private_key(ec.SECP256R1())
    cert = (
        x509.CertificateBuilder()
        .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, LOOPBACK)]))
        .issuer_name(ca_cert.subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(_now() - _SKEW)
        .not_valid_after(_now() + _VALIDITY)
        .add_extension(
            x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address(LOOPBACK))]),
            critical=False,
        )
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .sign(ca_key, hashes.SHA256())
    )
    found = TestCertificates(
        ca_file=directory / "ca.pem",
        cert_file=directory / "server.pem",
        key_file=directory / "server.key",
    )
    found.ca_file.write_bytes(_pem(ca_cert))
    found.cert_file.write_bytes(_pem(cert))
    found.key_file.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    found.key_file.chmod(0o600)
    return found


def another_ca(directory: Path) -> Path:
    """A CA certificate (PEM) that signed nothing the servers here present."""
    directory.mkdir(parents=True, exist_ok=True)
    _, cert = _ca("an unrelated CA")
    path = directory / "unrelated-ca.pem"
    path.write_bytes(_pem(cert))
    return path
