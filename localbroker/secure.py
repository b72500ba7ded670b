"""What the local broker needs to run secured: a CA and certificates (made with `openssl`), SCRAM users, and the
listener, SASL and authorizer properties.

The secured broker listens with SASL_SSL for clients (SCRAM-SHA-256/512, PLAIN, and OAUTHBEARER with unsigned
development tokens), with SSL and required client certificates for mutual TLS (a certificate's CN is its
principal), and on a controller listener that only the broker's own certificate may use. `StandardAuthorizer`
denies what no ACL allows; the `admin` user is the super user that grants ACLs.
"""

from __future__ import annotations

import json
import os
import secrets
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from aiokafka.helpers import create_ssl_context

from localbroker.errors import LocalBrokerError

__all__ = [
    "ADMIN",
    "BROKER_CN",
    "SecureFiles",
    "TlsError",
    "issue_certificate",
    "make_ca",
    "write_client_settings",
]

ADMIN = "admin"
BROKER_CN = "localbroker"
USERS_FILE = "users.json"
_DAYS = "825"
_SCRAM = ("SCRAM-SHA-256", "SCRAM-SHA-512")


class TlsError(LocalBrokerError):
    """Certificates could not be made (no `openssl`, or it failed)."""


def _openssl(*args: str, cwd: Path) -> None:
    tool = shutil.which("openssl")
    if tool is None:
        raise TlsError("`openssl` is not on PATH: the secured broker needs it to make its certificates")
    done = subprocess.run([tool, *args], cwd=cwd, capture_output=True, text=True, check=False, timeout=60)
    if done.returncode != 0:
        raise TlsError(f"openssl {args[0]} failed (exit {done.returncode}): {done.stderr.strip()[-500:]}")


def make_ca(directory: Path, name: str = "ca") -> tuple[Path, Path]:
    """A self-signed CA: (`<name>.pem`, `<name>.key`) in `directory`."""
    directory.mkdir(parents=True, exist_ok=True)
    cert, key = directory / f"{name}.pem", directory / f"{name}.key"
    _openssl(
        *("req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes"),
        *("-keyout", key.name, "-out", cert.name, "-days", _DAYS, "-subj", f"/CN=localbroker {name}"),
        *("-addext", "basicConstraints=critical,CA:TRUE", "-addext", "keyUsage=critical,keyCertSign,cRLSign"),
        cwd=directory,
    )
    key.chmod(0o600)
    return cert, key


def issue_certificate(
    ca: tuple[Path, Path], directory: Path, common_name: str, organization: str = ""
) -> tuple[Path, Path]:
    """A certificate for `common_name` signed by `ca`, valid for 127.0.0.1 and localhost as server and as client:
    (`<cn>.pem`, `<cn>.key`, PKCS#8 unencrypted) in `directory`. A Kubernetes API server reads `organization` as
    the user's group."""
    directory.mkdir(parents=True, exist_ok=True)
    cert, key, csr = (directory / f"{common_name}{suffix}" for suffix in (".pem", ".key", ".csr"))
    extensions = directory / f"{common_name}.ext"
    extensions.write_text(
        "subjectAltName=IP:127.0.0.1,DNS:localhost\nbasicConstraints=critical,CA:FALSE\n"
        "keyUsage=critical,digitalSignature,keyEncipherment\nextendedKeyUsage=serverAuth,clientAuth\n"
        "subjectKeyIdentifier=hash\nauthorityKeyIdentifier=keyid,issuer\n"
    )
    subject_org = f"/O={organization}" if organization else ""
    _openssl(
        *("req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes"),
        *("-keyout", key.name, "-out", csr.name, "-subj", f"{subject_org}/CN={common_name}"),
        cwd=directory,
    )
    _openssl(
        *("x509", "-req", "-in", csr.name, "-CA", str(ca[0]), "-CAkey", str(ca[1]), "-CAcreateserial"),
        *("-out", cert.name, "-days", _DAYS, "-extfile", extensions.name),
        cwd=directory,
    )
    key.chmod(0o600)
    csr.unlink()
    extensions.unlink()
    return cert, key


@dataclass(frozen=True)
class SecureFiles:
    """The TLS material and users of one secured broker's data dir."""

    directory: Path

    @property
    def ca(self) -> tuple[Path, Path]:
        return self.directory / "ca.pem", self.directory / "ca.key"

    @property
    def keystore(self) -> Path:
        """The broker's key and certificate chain, in the PEM keystore layout Kafka reads."""
        return self.directory / "broker-keystore.pem"

    @property
    def users_file(self) -> Path:
        return self.directory / USERS_FILE

    def users(self) -> dict[str, str]:
        """User name -> password of the SCRAM (and PLAIN) users made at format time."""
        return dict(json.loads(self.users_file.read_text())) if self.users_file.is_file() else {}

    def prepare(self, wanted_users: dict[str, str | None]) -> dict[str, str]:
        """Make the CA, the broker certificate and the users once; return the users (name -> password). A user
        with no given password gets a random one."""
        self.directory.mkdir(parents=True, exist_ok=True)
        os.chmod(self.directory, 0o700)
        if not self.keystore.is_file():
            ca = make_ca(self.directory)
            cert, key = issue_certificate(ca, self.directory, BROKER_CN)
            self.keystore.write_text(key.read_text() + cert.read_text() + ca[0].read_text())
            self.keystore.chmod(0o600)
        users = self.users()
        if not users:
            users = {ADMIN: secrets.token_urlsafe(18)}
            users.update({name: password or secrets.token_urlsafe(18) for name, password in wanted_users.items()})
            self.users_file.write_text(json.dumps(users, indent=2) + "\n")
            self.users_file.chmod(0o600)
        return users

    def admin_options(self) -> dict[str, Any]:
        """aiokafka arguments of the super user: SCRAM-SHA-512 over TLS."""
        return {
            "security_protocol": "SASL_SSL",
            "ssl_context": create_ssl_context(cafile=self.ca[0]),
            "sasl_mechanism": "SCRAM-SHA-512",
            "sasl_plain_username": ADMIN,
            "sasl_plain_password": self.users()[ADMIN],
        }

    def client_certificate(self, common_name: str) -> tuple[Path, Path]:
        """A client certificate (and key) for mutual TLS whose principal is `User:<common_name>`."""
        cert = self.directory / "clients" / f"{common_name}.pem"
        if cert.is_file():
            return cert, cert.with_suffix(".key")
        return issue_certificate(self.ca, self.directory / "clients", common_name)


def write_client_settings(files: SecureFiles, bootstrap: str) -> list[Path]:
    """Per user: `<user>.password` (mode 600) and `<user>.env`, the PLACEMENT_KAFKA__* settings that point at it,
    so `set -a; . tls/admin.env` configures the processor, the advisors and the tools without a secret inline."""
    written = []
    for name, password in files.users().items():
        secret = files.directory / f"{name}.password"
        secret.write_text(password + "\n")
        secret.chmod(0o600)
        env = files.directory / f"{name}.env"
        env.write_text(
            f"PLACEMENT_KAFKA__BOOTSTRAP_SERVERS={bootstrap}\n"
            "PLACEMENT_KAFKA__SECURITY_PROTOCOL=SASL_SSL\n"
            "PLACEMENT_KAFKA__SASL_MECHANISM=SCRAM-SHA-512\n"
            f"PLACEMENT_KAFKA__SASL_USERNAME={name}\n"
            f"PLACEMENT_KAFKA__SASL_PASSWORD_FILE={secret}\n"
            f"PLACEMENT_KAFKA__SSL_CA_FILE={files.ca[0]}\n"
        )
        written.append(env)
    return written


def scram_arguments(users: dict[str, str]) -> list[str]:
    """`StorageTool format` arguments that store every user's SCRAM credentials in the first metadata."""
    return [
        f"--add-scram={mechanism}=[name={name},password={password}]"
        for name, password in users.items()
        for mechanism in _SCRAM
    ]


def _jaas(module: str, options: dict[str, str]) -> str:
    joined = " ".join(f'{key}="{value}"' for key, value in options.items())
    return f"org.apache.kafka.common.security.{module} required {joined};"


def secure_properties(files: SecureFiles, users: dict[str, str], host: str, ports: dict[str, int]) -> dict[str, str]:
    """The listener, TLS, SASL and authorizer properties; `ports` has SASL_SSL, SSL and CONTROLLER."""
    admin = {"username": ADMIN, "password": users[ADMIN]}
    listeners = ",".join(f"{name}://{host}:{port}" for name, port in ports.items())
    plain_users = {f"user_{name}": password for name, password in users.items()}
    scram_jaas = _jaas("scram.ScramLoginModule", admin)
    return {
        "listeners": listeners,
        "advertised.listeners": listeners,
        "inter.broker.listener.name": "SASL_SSL",
        "listener.security.protocol.map": "CONTROLLER:SSL,SASL_SSL:SASL_SSL,SSL:SSL",
        "sasl.enabled.mechanisms": "SCRAM-SHA-256,SCRAM-SHA-512,PLAIN,OAUTHBEARER",
        "sasl.mechanism.inter.broker.protocol": "SCRAM-SHA-512",
        "listener.name.sasl_ssl.scram-sha-256.sasl.jaas.config": scram_jaas,
        "listener.name.sasl_ssl.scram-sha-512.sasl.jaas.config": scram_jaas,
        "listener.name.sasl_ssl.plain.sasl.jaas.config": _jaas("plain.PlainLoginModule", {**admin, **plain_users}),
        "listener.name.sasl_ssl.oauthbearer.sasl.jaas.config": _jaas(
            "oauthbearer.OAuthBearerLoginModule", {"unsecuredLoginStringClaim_sub": ADMIN}
        ),
        "ssl.keystore.type": "PEM",
        "ssl.keystore.location": str(files.keystore),
        "ssl.truststore.type": "PEM",
        "ssl.truststore.location": str(files.ca[0]),
        "listener.name.ssl.ssl.client.auth": "required",
        "listener.name.controller.ssl.client.auth": "required",
        "ssl.principal.mapping.rules": "RULE:^CN=([^,]+)$/$1/,DEFAULT",
        "authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
        "super.users": f"User:{ADMIN};User:{BROKER_CN}",
    }
