"""Everything the secure port needs, from one command:
`python 02-apiserver/certs.py --out DIR --master-ip 10.0.0.10 --nodes node1,node2`.

It makes a small certificate authority, a serving certificate for the API
server signed by it, one random token per user (tokens.csv, the format of
kube-apiserver's --token-auth-file), one kubeconfig per user that carries
the CA, the server's URL and that user's token, and the token the API
server presents to the kubelets (kubelet-client.token). Re-running is safe:
the CA and the tokens are kept (files already copied to nodes keep working)
unless --force; only the server certificate follows a changed address list.
The master's addresses and names are remembered (master-addresses): a
later run without --master-ip and --master-name keeps them, rather than
quietly re-issuing the certificate for loopback only and pointing every
kubeconfig at https://127.0.0.1:6443, which no other machine can reach.
"""
from __future__ import annotations

import argparse
import base64
import csv
import datetime
import io
import ipaddress
import os
import re
import secrets
import socket
import sys
from pathlib import Path
from urllib.parse import urlsplit

import yaml
from cryptography import x509
from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

CONTEXT = "groundup"
PORT = 6443
# Users every cluster has, with their groups. The authorization policy
# (written against these names) gives system:masters everything.
CONTROL_PLANE_USERS = {
    "admin": ["system:masters"],
    "scheduler": [],
    "controller-manager": [],
    "viewer": [],
}
# Nodes are users named as in Kubernetes, system:node:<name>, in the group
# system:nodes: the policy grants the group, and the name says which machine
# made a request, which is what Kubernetes' Node authorizer and NodeRestriction
# admission build on ("a kubelet may only change its own Node"). Their files
# are named after the bare node name: `scp system:node:node1.kubeconfig ...`
# would read "system" as a host name.
NODE_GROUP = "system:nodes"
# Names a pod uses to reach the API server through the `kubernetes` service,
# as in every Kubernetes cluster's serving certificate.
SERVICE_NAMES = ["kubernetes", "kubernetes.default", "kubernetes.default.svc",
                 "kubernetes.default.svc.cluster.local"]
# ...and the address it dials: KUBERNETES_SERVICE_HOST, the `kubernetes`
# Service's cluster IP, the first of the API server's default
# --service-cluster-ip-range (10.96.0.0/12), as kubeadm puts it in.
KUBERNETES_SERVICE_IP = "10.96.0.1"
CA_DAYS = 10 * 365
SERVER_DAYS = 365
RENEW_BEFORE = datetime.timedelta(days=30)
# Machines' clocks disagree a little; a certificate "not valid before" the
# second it was made would be refused by a node whose clock runs behind.
CLOCK_SKEW = datetime.timedelta(hours=1)
NODE_NAME = re.compile(r"^[a-z0-9]([-a-z0-9.]{0,61}[a-z0-9])?$")
# The API server's --kubelet-client-token-file and every kubelet's
# --authentication-token-file.
KUBELET_CLIENT_TOKEN = "kubelet-client.token"
MASTER_ADDRESSES = "master-addresses"     # what --master-ip and --master-name said last


def node_user(node: str) -> str:
    return f"system:node:{node}"


# [START certs-write-file]
def write_file(path: Path, data: bytes, mode: int) -> str:
    """Write atomically with `mode` set before any byte lands, so a key is
    never readable by others even for a moment. Says what happened."""
    old = path.read_bytes() if path.exists() else None
    if old == data:
        os.chmod(path, mode)
        return "unchanged"
    tmp = path.with_name(path.name + ".tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, mode)
    with os.fdopen(fd, "wb") as f:
        os.fchmod(f.fileno(), mode)   # os.open's mode is lost if tmp existed
        f.write(data)
    os.replace(tmp, path)
    return "created" if old is None else "updated"
# [END certs-write-file]


def new_key() -> ec.EllipticCurvePrivateKey:
    # P-256: small, fast, and understood by Go (kubectl), OpenSSL (Python's
    # ssl) and every browser; RSA 2048 would work too, just bigger and slower.
    return ec.generate_private_key(ec.SECP256R1())


def key_pem(key) -> bytes:
    return key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                             serialization.NoEncryption())


def cert_pem(cert: x509.Certificate) -> bytes:
    return cert.public_bytes(serialization.Encoding.PEM)


def name(common_name: str) -> x509.Name:
    return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common_name)])


def make_ca() -> tuple[x509.Certificate, ec.EllipticCurvePrivateKey]:
    key = new_key()
    now = datetime.datetime.now(datetime.timezone.utc)
    cert = (x509.CertificateBuilder()
            .subject_name(name("groundup-ca")).issuer_name(name("groundup-ca"))
            .public_key(key.public_key()).serial_number(x509.random_serial_number())
            .not_valid_before(now - CLOCK_SKEW).not_valid_after(now + datetime.timedelta(days=CA_DAYS))
            # path_length=0: this CA signs servers only, never another CA.
            .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
            .add_extension(x509.KeyUsage(digital_signature=True, key_cert_sign=True, crl_sign=True,
                                         content_commitment=False, key_encipherment=False,
                                         data_encipherment=False, key_agreement=False,
                                         encipher_only=False, decipher_only=False), critical=True)
            .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()), critical=False)
            .sign(key, hashes.SHA256()))
    return cert, key


# [START certs-server-cert]
def make_server_cert(ca_cert, ca_key, ips, dns_names):
    """A serving certificate: clients check the address they dialled against
    the subjectAltName list (Go ignores the common name), so every IP and
    name a client may use must be in it."""
    key = new_key()
    now = datetime.datetime.now(datetime.timezone.utc)
    sans = [x509.DNSName(n) for n in dns_names] + [x509.IPAddress(ip) for ip in ips]
    cert = (x509.CertificateBuilder()
            .subject_name(name("kube-apiserver")).issuer_name(ca_cert.subject)
            .public_key(key.public_key()).serial_number(x509.random_serial_number())
            .not_valid_before(now - CLOCK_SKEW).not_valid_after(now + datetime.timedelta(days=SERVER_DAYS))
            .add_extension(x509.SubjectAlternativeName(sans), critical=False)
            .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
            .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
            .add_extension(x509.KeyUsage(digital_signature=True, key_cert_sign=False, crl_sign=False,
                                         content_commitment=False, key_encipherment=False,
                                         data_encipherment=False, key_agreement=False,
                                         encipher_only=False, decipher_only=False), critical=True)
            .add_extension(x509.AuthorityKeyIdentifier.from_issuer_public_key(ca_key.public_key()),
                           critical=False)
            .sign(ca_key, hashes.SHA256()))
    return cert, key
# [END certs-server-cert]


def sans_of(cert: x509.Certificate) -> tuple[set, set]:
    san = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    return set(san.get_values_for_type(x509.IPAddress)), set(san.get_values_for_type(x509.DNSName))


def server_cert_problem(path: Path, ca_cert, ips, dns_names) -> str | None:
    """Why the existing server certificate must be replaced, or None to keep it."""
    if not path.exists():
        return None
    cert = x509.load_pem_x509_certificate(path.read_bytes())
    try:
        cert.verify_directly_issued_by(ca_cert)
    except (ValueError, TypeError, InvalidSignature):
        return "signed by another CA"
    if sans_of(cert) != (set(ips), set(dns_names)):
        return "addresses changed"
    if cert.not_valid_after_utc - datetime.datetime.now(datetime.timezone.utc) < RENEW_BEFORE:
        return "expires soon"
    return None


def read_tokens(path: Path) -> dict[str, list[str]]:
    """tokens.csv rows by user name: [token, user, uid, groups]."""
    if not path.exists():
        return {}
    rows = [row for row in csv.reader(io.StringIO(path.read_text())) if len(row) >= 3]
    return {row[1]: row for row in rows}


def tokens_csv(rows: list[list[str]]) -> bytes:
    out = io.StringIO()
    # csv quotes the groups column only when it holds a comma:
    # `token,user,uid,"group1,group2"`, the format --token-auth-file reads.
    csv.writer(out, lineterminator="\n").writerows(rows)
    return out.getvalue().encode()


def kubeconfig(user: str, token: str, server: str, ca_crt: bytes) -> bytes:
    config = {
        "apiVersion": "v1", "kind": "Config",
        "clusters": [{"name": CONTEXT, "cluster": {
            "server": server,
            "certificate-authority-data": base64.b64encode(ca_crt).decode()}}],
        "users": [{"name": user, "user": {"token": token}}],
        "contexts": [{"name": CONTEXT, "context": {"cluster": CONTEXT, "user": user,
                                                   "namespace": "default"}}],
        "current-context": CONTEXT,
    }
    header = f"# kubectl settings for {user}: the secure port, trusting our CA. Keep it secret.\n"
    return (header + yaml.safe_dump(config, sort_keys=False)).encode()


def wanted_addresses(master_ips, master_names, server_url):
    """The server certificate's IPs and names: what was asked for, the
    host in the URL the kubeconfigs name, loopback, the `kubernetes`
    Service's names and cluster IP (for clients in pods), and
    this machine's hostname (`make certs` runs on the master: whoever dials
    it by name, as `https://master:6443`, is not refused)."""
    ips = [ipaddress.ip_address(ip) for ip in ("127.0.0.1", "::1", KUBERNETES_SERVICE_IP)]
    names = ["localhost"] + SERVICE_NAMES
    hostname = socket.gethostname().lower()
    if re.fullmatch(r"[a-z0-9]([a-z0-9.-]*[a-z0-9])?", hostname):
        names.append(hostname)
    host = urlsplit(server_url).hostname
    try:
        ips.append(ipaddress.ip_address(host))
    except ValueError:
        names.append(host)
    ips += [ipaddress.ip_address(ip) for ip in master_ips]
    names += [n.lower() for n in master_names]
    return sorted(set(ips), key=lambda ip: (ip.version, ip)), sorted(set(names))


def default_server(master_ips, master_names) -> str:
    host = [*master_ips, *master_names, "127.0.0.1"][0]
    if ":" in host:   # an IPv6 address goes in brackets in a URL
        host = f"[{host}]"
    return f"https://{host}:{PORT}"


def new_token() -> str:
    """A random bearer token. URL-safe base64 may start with "-", which a
    command line then reads as a flag (`--token -x...` fails, about one
    token in 64), so such a token is drawn again."""
    while (token := secrets.token_urlsafe(32)).startswith("-"):
        pass
    return token


def generate(out: Path, master_ips=(), master_names=(), nodes=(), apiserver=None, force=False):
    """Create or refresh everything in `out`. Returns [(path, what happened)],
    the server URL and the addresses the server certificate is valid for."""
    out = Path(out)
    out.mkdir(mode=0o700, parents=True, exist_ok=True)
    master_ips, master_names = remember_master(out, master_ips, master_names, force)
    server = apiserver or default_server(master_ips, master_names)
    ips, dns_names = wanted_addresses(master_ips, master_names, server)
    report = []

    # The CA: everything else hangs off it, so keep it unless told otherwise.
    ca_crt_path, ca_key_path = out / "ca.crt", out / "ca.key"
    if ca_crt_path.exists() and ca_key_path.exists() and not force:
        ca_cert = x509.load_pem_x509_certificate(ca_crt_path.read_bytes())
        ca_key = serialization.load_pem_private_key(ca_key_path.read_bytes(), password=None)
        report += [(ca_crt_path, "kept"), (ca_key_path, "kept")]
    else:
        ca_cert, ca_key = make_ca()
        report.append((ca_key_path, write_file(ca_key_path, key_pem(ca_key), 0o600)))
        report.append((ca_crt_path, write_file(ca_crt_path, cert_pem(ca_cert), 0o644)))

    # The server certificate follows the address list; its key is made anew with it.
    crt_path, key_path = out / "apiserver.crt", out / "apiserver.key"
    problem = server_cert_problem(crt_path, ca_cert, ips, dns_names)
    if crt_path.exists() and key_path.exists() and problem is None and not force:
        report += [(crt_path, "kept"), (key_path, "kept")]
    else:
        cert, key = make_server_cert(ca_cert, ca_key, ips, dns_names)
        report.append((key_path, write_file(key_path, key_pem(key), 0o600)))
        report.append((crt_path, write_file(crt_path, cert_pem(cert), 0o644)
                       + (f" ({problem})" if problem else "")))

    # Tokens: existing rows are kept (nodes already hold them), new users added.
    tokens_path = out / "tokens.csv"
    rows = {} if force else read_tokens(tokens_path)
    wanted = dict(CONTROL_PLANE_USERS) | {node_user(n): [NODE_GROUP] for n in nodes}
    for user, groups in wanted.items():
        if user not in rows:
            # The uid column is for systems that reuse names; here the name serves.
            # No groups, no fourth column: Kubernetes would read "" as a group.
            rows[user] = [new_token(), user, user] + ([",".join(groups)] if groups else [])
    report.append((tokens_path, write_file(tokens_path, tokens_csv(list(rows.values())), 0o600)))

    # One kubeconfig per user in tokens.csv, rows kept from earlier runs included.
    for user, row in rows.items():
        file_name = user.removeprefix("system:node:").replace(":", "-") + ".kubeconfig"
        path = out / file_name
        report.append((path, write_file(path, kubeconfig(user, row[0], server, cert_pem(ca_cert)), 0o600)))

    # The key pair that signs and verifies ServiceAccount tokens (kubeadm
    # names them sa.key and sa.pub). Kept: a new key would void every
    # token pods hold.
    report += service_account_keys(out, force)

    # The API server's credential for the kubelets' port (`kubectl logs`):
    # it presents the token, every kubelet accepts it. Kept, like the
    # other tokens, since the nodes hold copies.
    client_token_path = out / KUBELET_CLIENT_TOKEN
    if client_token_path.exists() and not force:
        report.append((client_token_path, "kept"))
    else:
        report.append((client_token_path, write_file(client_token_path, (new_token() + "\n").encode(), 0o600)))
    return report, server, ips, dns_names


def service_account_keys(out: Path, force: bool) -> list:
    key_path, pub_path = out / "sa.key", out / "sa.pub"
    if key_path.exists() and pub_path.exists() and not force:
        return [(key_path, "kept"), (pub_path, "kept")]
    key = new_key()
    public = key.public_key().public_bytes(serialization.Encoding.PEM,
                                           serialization.PublicFormat.SubjectPublicKeyInfo)
    return [(key_path, write_file(key_path, key_pem(key), 0o600)), (pub_path, write_file(pub_path, public, 0o644))]


def remember_master(out: Path, master_ips, master_names, force: bool) -> tuple[list[str], list[str]]:
    """The master's addresses and names: as given, and then remembered; when
    none are given, those of the last run that gave some."""
    path = out / MASTER_ADDRESSES
    if master_ips or master_names or force:
        lines = [f"ip {ip}" for ip in master_ips] + [f"name {name}" for name in master_names]
        write_file(path, "".join(line + "\n" for line in lines).encode(), 0o644)
        return list(master_ips), list(master_names)
    remembered = path.read_text().split() if path.exists() else []
    pairs = list(zip(remembered[::2], remembered[1::2]))
    return [v for k, v in pairs if k == "ip"], [v for k, v in pairs if k == "name"]


def split_list(values) -> list[str]:
    """--nodes a,b and --master-ip x --master-ip y both work."""
    return [item.strip() for value in values or [] for item in value.split(",") if item.strip()]


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", required=True, type=Path, help="directory for the files")
    parser.add_argument("--master-ip", action="append", help="an IP clients dial the API server at (repeatable)")
    parser.add_argument("--master-name", action="append", help="a DNS name for the API server (repeatable)")
    parser.add_argument("--nodes", action="append", help="node names, comma separated: one token and kubeconfig each")
    parser.add_argument("--apiserver", help=f"the URL in the kubeconfigs (default https://MASTER:{PORT})")
    parser.add_argument("--force", action="store_true", help="new CA, new tokens, new everything")
    args = parser.parse_args(argv)
    args.master_ip, args.master_name = split_list(args.master_ip), split_list(args.master_name)
    args.nodes = split_list(args.nodes)
    for ip in args.master_ip:
        try:
            ipaddress.ip_address(ip)
        except ValueError:
            parser.error(f"--master-ip {ip!r} is not an IP address; use --master-name for host names")
    for node in args.nodes:
        if not NODE_NAME.match(node):
            parser.error(f"--nodes: {node!r} is not a valid node name (lower case letters, digits, '-', '.')")
        if node in CONTROL_PLANE_USERS:
            parser.error(f"--nodes: {node!r} would share a kubeconfig file with the {node} user; rename the node")
    if args.apiserver:
        url = urlsplit(args.apiserver)
        if url.scheme != "https" or not url.hostname:
            parser.error("--apiserver must be an https:// URL: kubectl sends no token over plain http")
    return args


def main(argv=None) -> int:
    args = parse_args(argv)
    report, server, ips, dns_names = generate(args.out, args.master_ip, args.master_name,
                                              args.nodes, args.apiserver, args.force)
    for path, what in report:
        what, _, why = what.partition(" (")
        print(f"{what:>9}  {path}" + (f"  ({why}" if why else ""))
    if any(p.suffix == ".kubeconfig" and what.startswith("updated") for p, what in report):
        print("Some kubeconfigs changed (a new server URL or CA): copy them to their machines again.")
    d = args.out
    if not (args.master_ip or args.master_name or args.force) and (d / MASTER_ADDRESSES).exists():
        print(f"\nThe master's addresses are those of the last run that gave some ({d}/{MASTER_ADDRESSES}); "
              "MASTER_IP= and MASTER_NAME= change them.")
    print(f"\nServer URL in the kubeconfigs: {server}")
    print(f"Server certificate is valid for: {', '.join(map(str, ips + dns_names))}")
    token = f"{d}/{KUBELET_CLIENT_TOKEN}"
    print("\nCopy to the control-plane machine (the API server reads the first four):")
    print(f"  {d}/apiserver.crt {d}/apiserver.key {d}/tokens.csv {token} {d}/ca.crt {d}/sa.key {d}/sa.pub")
    print(f"  {d}/admin.kubeconfig {d}/scheduler.kubeconfig {d}/controller-manager.kubeconfig")
    print("  python 02-apiserver/apiserver.py --data-dir DATA "
          f"--tls-cert-file {d}/apiserver.crt --tls-private-key-file {d}/apiserver.key "
          f"--token-auth-file {d}/tokens.csv --authorization-policy-file 02-apiserver/policy.jsonl "
          f"--kubelet-client-token-file {token} --service-account-signing-key-file {d}/sa.key "
          f"--service-account-key-file {d}/sa.pub --root-ca-file {d}/ca.crt")
    for node in args.nodes:
        print(f"Copy to {node}: {d}/{node}.kubeconfig {d}/ca.crt {token}")
    if args.nodes:
        print(f"  python 01-kubelet/kubelet.py --node-name NODE --kubeconfig {d}/NODE.kubeconfig "
              f"--authentication-token-file {token}")
    print(f"Keep {d}/ca.key off the cluster: whoever holds it can mint certificates the nodes trust.")
    print(f"For yourself: export KUBECONFIG={d.resolve()}/admin.kubeconfig")
    return 0


if __name__ == "__main__":
    sys.exit(main())
