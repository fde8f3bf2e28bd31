"""The cluster's certificates and keys, made once per state directory with `cryptography`.

Why real TLS: the operator's client, kubectl and Prometheus must talk to the API server the
way they would in a real cluster, and RBAC needs identities: client certificates carry the
user (CN) and groups (O), e.g. the admin in ``system:masters`` and the controller-manager as
``system:kube-controller-manager``. Service-account tokens are signed with an RSA key pair.
Files are kept between runs so tokens and kubeconfigs stay valid across restarts; only the
API server's certificate is made again when it lacks an address asked for (the pod network's
host address, through which pods reach the API server: see podnetwork.py and relay.py).
"""

from __future__ import annotations

import datetime
import ipaddress
from dataclasses import dataclass, replace
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec, rsa
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

VALIDITY = datetime.timedelta(days=365)
SERVICE_CLUSTER_IP = "10.96.0.1"
APISERVER_NAMES = (
    "localhost",
    "kubernetes",
    "kubernetes.default",
    "kubernetes.default.svc",
    "kubernetes.default.svc.cluster.local",
)

PrivateKey = ec.EllipticCurvePrivateKey | rsa.RSAPrivateKey


@dataclass(frozen=True)
class CertSpec:
    """What one leaf certificate says: who it is, and whether it serves or is a client."""

    name: str
    common_name: str
    organizations: tuple[str, ...] = ()
    server: bool = False
    client: bool = True
    dns_names: tuple[str, ...] = ()
    ips: tuple[str, ...] = ()


LEAVES = (
    CertSpec("apiserver", "kube-apiserver", server=True, client=False,
             dns_names=APISERVER_NAMES, ips=("127.0.0.1", SERVICE_CLUSTER_IP)),
    CertSpec("etcd", "etcd", server=True, dns_names=("localhost",), ips=("127.0.0.1",)),
    CertSpec("apiserver-etcd-client", "kube-apiserver-etcd-client"),
    CertSpec("admin", "admin", organizations=("system:masters",)),
    CertSpec("controller-manager", "system:kube-controller-manager"),
    CertSpec("scheduler", "system:kube-scheduler"),
    # The aggregation layer's client; only this name may assert users via request headers.
    CertSpec("front-proxy-client", "front-proxy-client"),
)  # fmt: skip


def _write_key(path: Path, key: PrivateKey) -> None:
    pem = key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    )
    path.write_bytes(pem)
    path.chmod(0o600)


def _name(common_name: str, organizations: tuple[str, ...] = ()) -> x509.Name:
    attributes = [x509.NameAttribute(NameOID.ORGANIZATION_NAME, org) for org in organizations]
    attributes.append(x509.NameAttribute(NameOID.COMMON_NAME, common_name))
    return x509.Name(attributes)


def _builder(subject: x509.Name, issuer: x509.Name, public_key: object) -> x509.CertificateBuilder:
    now = datetime.datetime.now(datetime.UTC)
    return (
        x509.CertificateBuilder()
        .subject_name(subject)
        .issuer_name(issuer)
        .public_key(public_key)  # type: ignore[arg-type]
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + VALIDITY)
    )


def _make_ca(pki_dir: Path) -> tuple[x509.Certificate, PrivateKey]:
    key = ec.generate_private_key(ec.SECP256R1())
    subject = _name("specdecode-local-ca")
    cert = (
        _builder(subject, subject, key.public_key())
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .add_extension(
            x509.KeyUsage(
                digital_signature=True, content_commitment=False, key_encipherment=False,
                data_encipherment=False, key_agreement=False, key_cert_sign=True,
                crl_sign=True, encipher_only=False, decipher_only=False,
            ),
            critical=True,
        )
        .sign(key, hashes.SHA256())
    )  # fmt: skip
    _write_key(pki_dir / "ca.key", key)
    (pki_dir / "ca.crt").write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    return cert, key


def _make_leaf(
    pki_dir: Path, spec: CertSpec, ca_cert: x509.Certificate, ca_key: PrivateKey
) -> None:
    """Write ``<name>.crt`` and ``<name>.key`` for ``spec``, signed by the cluster CA."""
    key = ec.generate_private_key(ec.SECP256R1())
    usages = [ExtendedKeyUsageOID.SERVER_AUTH] if spec.server else []
    usages += [ExtendedKeyUsageOID.CLIENT_AUTH] if spec.client else []
    builder = (
        _builder(_name(spec.common_name, spec.organizations), ca_cert.subject, key.public_key())
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(x509.ExtendedKeyUsage(usages), critical=False)
    )
    alt_names: list[x509.GeneralName] = [x509.DNSName(name) for name in spec.dns_names]
    alt_names += [x509.IPAddress(ipaddress.ip_address(ip)) for ip in spec.ips]
    if alt_names:
        builder = builder.add_extension(x509.SubjectAlternativeName(alt_names), critical=False)
    cert = builder.sign(ca_key, hashes.SHA256())
    _write_key(pki_dir / f"{spec.name}.key", key)
    (pki_dir / f"{spec.name}.crt").write_bytes(cert.public_bytes(serialization.Encoding.PEM))


def _make_service_account_keys(pki_dir: Path) -> None:
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    _write_key(pki_dir / "sa.key", key)
    public = key.public_key().public_bytes(
        serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
    )
    (pki_dir / "sa.pub").write_bytes(public)


def _names_ips(cert_path: Path, wanted: tuple[str, ...]) -> bool:
    """True if the certificate's subject alternative names hold every address in ``wanted``."""
    cert = x509.load_pem_x509_certificate(cert_path.read_bytes())
    try:
        names = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    except x509.ExtensionNotFound:
        return not wanted
    present = {str(ip) for ip in names.get_values_for_type(x509.IPAddress)}
    return set(wanted) <= present


def ensure_pki(pki_dir: Path, extra_apiserver_ips: tuple[str, ...] = ()) -> None:
    """Create whatever certificate or key is missing under ``pki_dir`` (idempotent).

    ``extra_apiserver_ips`` must be in the API server certificate too (made again if not).
    """
    pki_dir.mkdir(parents=True, exist_ok=True)
    if (pki_dir / "ca.crt").exists() and (pki_dir / "ca.key").exists():
        ca_cert = x509.load_pem_x509_certificate((pki_dir / "ca.crt").read_bytes())
        loaded = serialization.load_pem_private_key((pki_dir / "ca.key").read_bytes(), None)
        assert isinstance(loaded, ec.EllipticCurvePrivateKey | rsa.RSAPrivateKey)
        ca_key: PrivateKey = loaded
    else:
        ca_cert, ca_key = _make_ca(pki_dir)
        for stale in pki_dir.glob("*.crt"):
            if stale.name != "ca.crt":
                stale.unlink()
    for leaf in LEAVES:
        cert_path = pki_dir / f"{leaf.name}.crt"
        if leaf.name == "apiserver":
            leaf = replace(leaf, ips=leaf.ips + tuple(extra_apiserver_ips))  # noqa: PLW2901
            if cert_path.exists() and not _names_ips(cert_path, leaf.ips):
                cert_path.unlink()
        if not cert_path.exists():
            _make_leaf(pki_dir, leaf, ca_cert, ca_key)
    if not (pki_dir / "sa.key").exists():
        _make_service_account_keys(pki_dir)
