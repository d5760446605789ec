"""TLS for a Flink cluster on one machine: a key and certificate of its own, and the settings.

:func:`make_keys` writes, into a private folder, an RSA key (Flink's default cipher suite,
``security.ssl.algorithms``, is an RSA one) with a self-signed certificate for 127.0.0.1
and ``localhost``, as a PKCS#12 store (Flink's key store and trust store at once) and as
PEM (Python's client side).  :func:`tls_config` is the ``config.yaml`` that makes every
connection, inside the cluster and at its REST endpoint, authenticate both ends with it.
"""

from __future__ import annotations

import os
import secrets
from pathlib import Path

__all__ = ["make_keys", "tls_config"]


def make_keys(folder: Path) -> tuple[str, Path, Path]:
    """Write a key and a certificate for this host: PKCS#12 for Flink, PEM for Python."""
    import datetime
    import ipaddress

    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import rsa
    from cryptography.hazmat.primitives.serialization import pkcs12
    from cryptography.x509.oid import NameOID

    # RSA: Flink's default cipher suite (security.ssl.algorithms) is an RSA one
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "cloudsched-flink")])
    now = datetime.datetime.now(datetime.UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=2))
        .add_extension(
            # Flink's data connections check the name "localhost" (seen with 2.3.0)
            x509.SubjectAlternativeName(
                [x509.IPAddress(ipaddress.ip_address("127.0.0.1")), x509.DNSName("localhost")]
            ),
            critical=False,
        )
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(key, hashes.SHA256())
    )
    password = secrets.token_hex(16)
    encryption = serialization.BestAvailableEncryption(password.encode())
    files = {
        "cluster.p12": pkcs12.serialize_key_and_certificates(b"flink", key, cert, None, encryption),
        "cluster.pem": cert.public_bytes(serialization.Encoding.PEM),
        "cluster-key.pem": key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        ),
    }
    for file, data in files.items():
        fd = os.open(folder / file, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
    return password, folder / "cluster.pem", folder / "cluster-key.pem"


def tls_config(store: Path, password: str) -> dict[str, str]:
    """Flink's settings for TLS with both ends authenticated, inside and at REST."""
    out = {}
    for scope in ("internal", "rest"):
        out[f"security.ssl.{scope}.enabled"] = "true"
        for kind in ("keystore", "truststore"):
            out[f"security.ssl.{scope}.{kind}"] = str(store)
            out[f"security.ssl.{scope}.{kind}-password"] = password
        out[f"security.ssl.{scope}.key-password"] = password
    out["security.ssl.rest.authentication-enabled"] = "true"
    return out
