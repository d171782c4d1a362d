"""TLS for `serve`, `proxy` and `record`: the certificate and key a user gives (checked before Granian starts, so
a wrong file is one line naming it, not a traceback in every worker), or a development certificate for
localhost made with a local CA (`--tls-self-signed`) that a browser or `curl --cacert` can be told to trust.

The development CA and certificate are kept in a folder outside the checkout and made again only when missing or
near their end, so a CA trusted once stays trusted across runs."""
from __future__ import annotations

import datetime
import os
import ssl
from dataclasses import dataclass
from pathlib import Path

__all__ = ["DEV_NAMES", "TlsFiles", "TlsError", "checked", "development_files", "development_folder"]

DEV_NAMES = ("localhost", "127.0.0.1", "::1")  # what the development certificate is good for
_RENEW_BEFORE = datetime.timedelta(days=7)  # a certificate ending sooner than this is made again


class TlsError(Exception):
    """A certificate or key that cannot be served: says which file and why."""


@dataclass(frozen=True)
class TlsFiles:
    """What Granian serves TLS with; `ca` is the development CA a client must trust (None for the user's own)."""

    cert: Path
    key: Path
    ca: Path | None = None


def checked(cert: Path | None, key: Path | None) -> TlsFiles:
    """The user's certificate (chain) and key, once they are known to load together."""
    if cert is None or key is None:
        given, missing = ("--tls-cert", "--tls-key") if key is None else ("--tls-key", "--tls-cert")
        raise TlsError(f"{given} needs {missing} too (a certificate and its private key, PEM files)")
    for flag, path in (("--tls-cert", cert), ("--tls-key", key)):
        if not path.is_file():
            raise TlsError(f"{flag} {path}: no such file")
    try:
        ssl.create_default_context(ssl.Purpose.CLIENT_AUTH).load_cert_chain(str(cert), str(key))
    except ssl.SSLError as exc:
        why = ("the key is not the certificate's" if exc.reason == "KEY_VALUES_MISMATCH" else
               "they are not a PEM certificate and its PEM private key (without a password)")
        raise TlsError(f"--tls-cert {cert} and --tls-key {key} cannot be served together: {why}") from None
    except OSError as exc:
        raise TlsError(f"--tls-cert {cert} / --tls-key {key}: {exc.strerror or exc}") from None
    return TlsFiles(cert, key)


def development_folder() -> Path:
    """`$MOCKSERVER_TLS_DIR`, else `$XDG_CONFIG_HOME/mockserver/tls`, else `~/.config/mockserver/tls`: beside
    the user's settings, not a cache a cleaner may empty (a browser trusts the CA kept there)."""
    if os.environ.get("MOCKSERVER_TLS_DIR"):
        return Path(os.environ["MOCKSERVER_TLS_DIR"])
    base = os.environ.get("XDG_CONFIG_HOME") or str(Path.home() / ".config")
    return Path(base) / "mockserver" / "tls"


def development_files(folder: Path) -> TlsFiles:
    """The development CA and a certificate for `DEV_NAMES` signed by it, in `folder`: those already there while
    valid, else new ones (the CA too, when it is missing or ending)."""
    files = TlsFiles(folder / "localhost.pem", folder / "localhost-key.pem", folder / "ca.pem")
    assert files.ca is not None
    if all(_lasts(path) for path in (files.cert, files.ca)) and files.key.is_file():
        return files
    import trustme  # here: only --tls-self-signed needs it (and the `cryptography` it brings)

    folder.mkdir(parents=True, exist_ok=True)
    ca = trustme.CA(organization_name="mockserver development CA")
    issued = ca.issue_cert(*DEV_NAMES)
    ca.cert_pem.write_to_path(str(files.ca))
    with open(files.cert, "wb") as out:
        for pem in issued.cert_chain_pems:
            out.write(pem.bytes())
    descriptor = os.open(files.key, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)  # the key: the user's only
    with os.fdopen(descriptor, "wb") as out:
        out.write(issued.private_key_pem.bytes())
    return files


def _lasts(path: Path) -> bool:
    """Whether the PEM certificate at `path` exists and is valid for a while yet."""
    if not path.is_file():
        return False
    from cryptography import x509

    try:
        ends = x509.load_pem_x509_certificate(path.read_bytes()).not_valid_after_utc
    except ValueError:
        return False
    return ends - datetime.datetime.now(datetime.UTC) > _RENEW_BEFORE
