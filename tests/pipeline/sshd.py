"""A throwaway OpenSSH server on 127.0.0.1 for the SSH-remote tests.

:func:`start_sshd` generates a host key and a user key pair in a temporary directory,
writes a key-only ``sshd_config`` (no passwords, no PAM, everything under that
directory) and starts ``sshd -D`` on a free loopback port as a child process. The
returned :class:`SshServer` also knows the ``known_hosts`` line for the server, so
clients can verify the host key instead of disabling the check.
"""

from __future__ import annotations

import getpass
import os
import shutil
import socket
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

SSHD_CANDIDATES = ("/usr/sbin/sshd", "/usr/local/sbin/sshd", "/sbin/sshd")


def find_sshd() -> str | None:
    """Return the path of the ``sshd`` binary, or None when openssh-server is missing."""
    found = shutil.which("sshd")
    if found:
        return found
    for cand in SSHD_CANDIDATES:
        if os.access(cand, os.X_OK):
            return cand
    return None


@dataclass
class SshServer:
    """A running loopback sshd and the client material needed to reach it."""

    proc: subprocess.Popen
    port: int
    user: str
    user_key: Path
    host_pubkey_line: str
    log: Path

    @property
    def known_hosts_line(self) -> str:
        """The ``known_hosts`` entry for ``[127.0.0.1]:PORT`` with the server's host key."""
        key_type, key_b64 = self.host_pubkey_line.split()[:2]
        return f"[127.0.0.1]:{self.port} {key_type} {key_b64}\n"

    def url(self, path: Path) -> str:
        """``ssh://user@127.0.0.1:PORT/<abs path>`` for a directory on this machine."""
        return f"ssh://{self.user}@127.0.0.1:{self.port}{Path(path).resolve()}"

    def stop(self) -> None:
        """Terminate the server (its pid only) and wait for it."""
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=10)


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _keygen(path: Path, key_type: str = "ed25519") -> None:
    subprocess.run(
        ["ssh-keygen", "-q", "-t", key_type, "-N", "", "-C", "rightsize-test", "-f", str(path)],
        check=True, capture_output=True,
    )


def _wait_banner(port: int, proc: subprocess.Popen, log: Path, timeout: float = 15.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"sshd exited with {proc.returncode}: {log.read_text()[-2000:]}")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=1.0) as s:
                if s.recv(64).startswith(b"SSH-2.0"):
                    return
        except OSError:
            time.sleep(0.1)
    raise RuntimeError(f"sshd did not answer on 127.0.0.1:{port}: {log.read_text()[-2000:]}")


def start_sshd(workdir: Path, sshd: str) -> SshServer:
    """Start a key-only sshd on a free 127.0.0.1 port; all its files live in ``workdir``."""
    workdir.mkdir(parents=True, exist_ok=True)
    host_key = workdir / "host_ed25519"
    user_key = workdir / "user_ed25519"
    _keygen(host_key)
    _keygen(user_key)
    authorized = workdir / "authorized_keys"
    authorized.write_text((user_key.with_suffix(".pub")).read_text())
    authorized.chmod(0o600)
    if os.geteuid() == 0:
        # sshd run as root refuses to start without its privilege-separation directory,
        # which the system service normally creates at boot.
        Path("/run/sshd").mkdir(mode=0o755, exist_ok=True)
    port = _free_port()
    config = workdir / "sshd_config"
    config.write_text(
        "\n".join([
            f"Port {port}",
            "ListenAddress 127.0.0.1",
            f"HostKey {host_key}",
            f"PidFile {workdir / 'sshd.pid'}",
            f"AuthorizedKeysFile {authorized}",
            "PubkeyAuthentication yes",
            "PasswordAuthentication no",
            "KbdInteractiveAuthentication no",
            "PermitRootLogin prohibit-password",
            "UsePAM no",
            "StrictModes no",
            "Subsystem sftp internal-sftp",
            "LogLevel VERBOSE",
            "",
        ])
    )
    log = workdir / "sshd.log"
    with open(log, "wb") as log_fh:
        proc = subprocess.Popen(
            [sshd, "-D", "-e", "-f", str(config)],
            stdin=subprocess.DEVNULL, stdout=log_fh, stderr=subprocess.STDOUT,
        )
    server = SshServer(
        proc=proc, port=port, user=getpass.getuser(), user_key=user_key,
        host_pubkey_line=host_key.with_suffix(".pub").read_text().strip(), log=log,
    )
    try:
        _wait_banner(port, proc, log)
    except BaseException:
        server.stop()
        raise
    return server


def write_known_hosts(home: Path, line: str) -> Path:
    """Write ``home/.ssh/known_hosts`` holding ``line`` (mode 600) and return its path."""
    ssh_dir = home / ".ssh"
    ssh_dir.mkdir(parents=True, exist_ok=True, mode=0o700)
    kh = ssh_dir / "known_hosts"
    kh.write_text(line)
    kh.chmod(0o600)
    return kh
