"""HTTPS and HTTP/2 (`--tls-cert/--tls-key`, `--tls-self-signed`, `--http`), with real clients: httpx over TLS
trusting only the development CA the mock printed, asking for HTTP/2 by ALPN; and Chromium."""
from __future__ import annotations

import base64
import hashlib
import re
import ssl
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from conftest import DEMO, KINDGI_FIXTURES, KINDGI_SPEC, free_port, serving
from mockserver.cli import main

KINDGI = ("--spec", str(KINDGI_SPEC), "--fixtures", str(KINDGI_FIXTURES))
CA_LINE = re.compile(r"trust its CA (\S+) ")


@pytest.fixture()
def self_signed(tmp_path: Path) -> Iterator[tuple[int, Path, str]]:
    """A mock on HTTPS with the development certificate; its port, the CA it printed, and its start-up lines."""
    with serving(*KINDGI, "--tls-self-signed", env={"MOCKSERVER_TLS_DIR": str(tmp_path / "tls")}) as (proc, port):
        assert proc.stderr is not None
        said = "".join(proc.stderr.readline() for _ in range(2))
        found = CA_LINE.search(said)
        assert found, said
        yield port, Path(found.group(1)), said


@pytest.mark.slow
def test_a_client_trusting_the_printed_ca_gets_answers_over_http2(self_signed: tuple[int, Path, str]) -> None:
    port, ca, said = self_signed
    assert f"on https://127.0.0.1:{port}" in said and ca.parent.name == "tls"
    with httpx.Client(http2=True, verify=ssl.create_default_context(cafile=ca)) as client:
        answer = client.get(f"https://localhost:{port}/v1/test-sets?limit=1", headers=DEMO)
    assert answer.status_code == 200 and answer.http_version == "HTTP/2"
    assert answer.json()["data"]
    with httpx.Client(verify=ssl.create_default_context(cafile=ca)) as client:  # an HTTP/1.1 client on the same port
        assert client.get(f"https://127.0.0.1:{port}/v1/test-sets?limit=1", headers=DEMO).http_version == "HTTP/1.1"
    with pytest.raises(httpx.ConnectError, match="CERTIFICATE_VERIFY_FAILED"), httpx.Client() as untrusting:
        untrusting.get(f"https://localhost:{port}/v1/test-sets", headers=DEMO)


@pytest.mark.slow
def test_the_development_ca_is_kept_across_starts_so_a_trusted_ca_stays_trusted(tmp_path: Path) -> None:
    env = {"MOCKSERVER_TLS_DIR": str(tmp_path / "tls")}
    with serving(*KINDGI, "--tls-self-signed", env=env):
        first = (tmp_path / "tls" / "ca.pem").read_bytes()
    with serving(*KINDGI, "--tls-self-signed", env=env) as (_, port):
        assert (tmp_path / "tls" / "ca.pem").read_bytes() == first
        with httpx.Client(verify=ssl.create_default_context(cafile=tmp_path / "tls" / "ca.pem")) as client:
            assert client.get(f"https://localhost:{port}/v1/test-sets", headers=DEMO).status_code == 200


@pytest.mark.slow
def test_the_users_own_certificate_and_http1_only(tmp_path: Path) -> None:
    trustme = pytest.importorskip("trustme")
    ca = trustme.CA()
    issued = ca.issue_cert("localhost")
    cert, key = tmp_path / "cert.pem", tmp_path / "key.pem"
    issued.cert_chain_pems[0].write_to_path(str(cert))
    issued.private_key_pem.write_to_path(str(key))
    ca.cert_pem.write_to_path(str(tmp_path / "ca.pem"))
    with serving(*KINDGI, "--tls-cert", str(cert), "--tls-key", str(key), "--http", "1") as (proc, port):
        with httpx.Client(http2=True, verify=ssl.create_default_context(cafile=tmp_path / "ca.pem")) as client:
            answer = client.get(f"https://localhost:{port}/v1/test-sets", headers=DEMO)
        assert answer.status_code == 200 and answer.http_version == "HTTP/1.1"


@pytest.mark.parametrize(("flags", "said"), [
    (("--tls-cert", "cert.pem"), "--tls-cert needs --tls-key too"),
    (("--tls-key", "key.pem"), "--tls-key needs --tls-cert too"),
    (("--tls-cert", "nowhere.pem", "--tls-key", "key.pem"), "--tls-cert nowhere.pem: no such file"),
    (("--tls-cert", "key.pem", "--tls-key", "key.pem"), "--tls-cert key.pem and --tls-key key.pem cannot be served "
                                                        "together: they are not a PEM certificate"),
    (("--tls-self-signed", "--tls-cert", "cert.pem"), "--tls-self-signed makes its own certificate"),
])
def test_unusable_tls_files_are_one_line_naming_them_and_exit_2(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                               capsys: pytest.CaptureFixture[str],
                                                               flags: tuple[str, ...], said: str) -> None:
    (tmp_path / "cert.pem").write_text("not a certificate\n")
    (tmp_path / "key.pem").write_text("-----BEGIN PRIVATE KEY-----\nnot a key\n-----END PRIVATE KEY-----\n")
    monkeypatch.chdir(tmp_path)
    assert main(["serve", *KINDGI, "--port", str(free_port()), *flags]) == 2  # before anything listens
    assert capsys.readouterr().err.startswith(f"mockserver: {said}")


@pytest.mark.browser
@pytest.mark.slow
def test_chromium_loads_the_dashboard_over_https_and_http2(self_signed: tuple[int, Path, str]) -> None:
    from cryptography import x509
    from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat

    sync_api = pytest.importorskip("playwright.sync_api", reason="playwright is not installed")
    chromium = Path("/usr/bin/chromium")
    if not chromium.exists():
        pytest.skip(f"no browser: {chromium} is missing (`make test` installs Debian's chromium where apt works)")
    port, ca, _ = self_signed
    leaf = x509.load_pem_x509_certificate((ca.parent / "localhost.pem").read_bytes())
    spki = base64.b64encode(hashlib.sha256(leaf.public_key().public_bytes(
        Encoding.DER, PublicFormat.SubjectPublicKeyInfo)).digest()).decode()
    with sync_api.sync_playwright() as playwright:  # trusts this key only: any other certificate still fails
        browser = playwright.chromium.launch(executable_path=str(chromium), args=[
            "--headless", "--no-sandbox", "--disable-gpu", f"--ignore-certificate-errors-spki-list={spki}"])
        page = browser.new_page()
        page.goto(f"https://localhost:{port}/__mock/")
        protocol = page.evaluate("performance.getEntriesByType('navigation')[0].nextHopProtocol")
        browser.close()
    assert protocol == "h2"
