"""Hosts that Ray's cluster launcher can reach: an OpenSSH server in each namespace host, and a view of
the machine that looks like a machine of its own (``ding_ray.testing.hosts.Hosts(n, ssh=True)``).

What a host of this kind sees differently from the machine it runs on, through bind mounts in its own
mount namespace (gone with the host's last process, so nothing is left to unmount):

- ``/root``: a home of its own, the home ``ssh`` logs into (the passwd entry's, whatever ``$HOME``
  says), holding the run's key pair (``~/.ssh/id_ed25519``, also its only ``authorized_keys``
  entry), a ``~/.bashrc`` that activates the Python environment this harness runs in, and a pip
  configuration for a machine without a network (no index; builds without isolation, from the
  packages installed).
- ``~/shared``: one folder that every host of the run sees, as machines share an NFS mount; each
  host's ``~/.bashrc`` sets ``DING_RAY_STORAGE_PATH`` to ``~/shared/checkpoints`` there, as
  ``cluster-local.yaml`` asks of each machine, so a learner or buffer writes its checkpoints where
  the driver finds them.
- ``/tmp``: a temp dir of its own, so that ``ray start`` and ``ray up`` keep their state where Ray
  looks by default (``/tmp/ray``), apart from every other Ray on the machine; a Python environment
  or working folder that lives under ``/tmp`` is bound into it at the same path.
- the Python environment (``sys.prefix``) under an overlay: ``pip install`` on the host writes into
  a layer of the host's own, and the environment every other process uses stays as it is.
- ``/run`` and ``/var/log``: empty, for sshd's privilege-separation directory and its login
  records.
"""

from __future__ import annotations

import os
import pwd
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

SSHD = "/usr/sbin/sshd"  # Debian's openssh-server: sshd must be started by its absolute path
KEY = "id_ed25519"  # the run's key pair, in every host's ~/.ssh

SSHD_CONFIG = """\
ListenAddress {ip}:22
HostKey /tmp/sshd/host_key
PidFile /tmp/sshd/sshd.pid
AuthorizedKeysFile .ssh/authorized_keys
PermitRootLogin prohibit-password
PasswordAuthentication no
KbdInteractiveAuthentication no
UsePAM no
PrintMotd no
PrintLastLog no
Subsystem sftp internal-sftp
"""

PIP_CONFIG = """\
[global]
no-index = true
no-build-isolation = false
"""


def make_key_pair(path: Path) -> None:
    """An ed25519 key pair without a passphrase at ``path`` and ``path.pub``."""
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(path)], check=True)


def prepare(host_dir: Path, ip: str, hostname: str, key: Path) -> None:
    """Write what host ``host_dir`` mounts and runs: its home with the run's key pair, its temp dir with
    sshd's configuration and host key, the overlay's layers over the Python environment, its
    ``/etc/hosts``."""
    host_dir.mkdir(parents=True)
    (host_dir / "hosts").write_text(f"127.0.0.1 localhost\n{ip} {hostname}\n")
    home, tmp = host_dir / "root", host_dir / "tmp"
    ssh = home / ".ssh"
    ssh.mkdir(parents=True)
    home.chmod(0o700)
    ssh.chmod(0o700)
    shutil.copy(key, ssh / KEY)
    shutil.copy(key.with_suffix(".pub"), ssh / f"{KEY}.pub")
    shutil.copy(key.with_suffix(".pub"), ssh / "authorized_keys")
    activate = shlex.quote(str(Path(sys.prefix) / "bin" / "activate"))
    (home / ".bashrc").write_text(f". {activate}\nexport DING_RAY_STORAGE_PATH=~/shared/checkpoints\n")
    (home / "shared").mkdir()
    (home / ".config" / "pip").mkdir(parents=True)
    (home / ".config" / "pip" / "pip.conf").write_text(PIP_CONFIG)
    (tmp / "sshd").mkdir(parents=True)
    (tmp / "sshd" / "config").write_text(SSHD_CONFIG.format(ip=ip))
    subprocess.run(
        ["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(tmp / "sshd" / "host_key")], check=True
    )
    for name in ("run", "log", "prefix/upper", "prefix/work"):
        (host_dir / name).mkdir(parents=True)


def boot_command(host_dir: Path, hostname: str, shared: Path) -> list[str]:
    """The command that makes a host's own view of the machine (see the module docstring) and starts
    its sshd, which listens before it returns. Run in a UTS namespace of the host's own: its hostname
    resolves to its address, which is how Ray finds a node's address on a network without a default
    route (``ray start`` without ``--node-ip-address``, as the cluster yamls run it)."""
    d = shlex.quote(str(host_dir))
    prefix = shlex.quote(sys.prefix)
    layers = f"lowerdir={prefix},upperdir={d}/prefix/upper,workdir={d}/prefix/work"
    # Python may live under the home it hides (pyenv's ~/.pyenv): it is bound into the new one
    home = Path(pwd.getpwuid(os.getuid()).pw_dir)
    keep = sorted({Path(p) for p in (sys.base_prefix, sys.prefix) if Path(p).is_relative_to(home)})
    keep_python = [
        f"mkdir -p {d}/root/{shlex.quote(str(p.relative_to(home)))} && "
        f"mount --bind {shlex.quote(str(p))} {d}/root/{shlex.quote(str(p.relative_to(home)))}"
        for p in keep
    ]
    # the Python environment and the working folder may live under the /tmp the host replaces (a
    # checkout in /tmp): each is bound, with what is mounted in it, into the host's own /tmp
    tmp_root = Path("/tmp")
    wanted = (sys.base_prefix, sys.prefix, os.getcwd())
    under_tmp = [Path(p) for p in wanted if Path(p).is_relative_to(tmp_root)]
    tops = sorted({p for p in under_tmp if not any(p != q and p.is_relative_to(q) for q in under_tmp)})
    keep_tmp = [
        f"mkdir -p {d}/tmp/{shlex.quote(str(p.relative_to(tmp_root)))} && "
        f"mount --rbind {shlex.quote(str(p))} {d}/tmp/{shlex.quote(str(p.relative_to(tmp_root)))}"
        for p in tops
    ]
    script = " && ".join(
        [
            f"hostname {shlex.quote(hostname)}",
            f"mount --bind {d}/hosts /etc/hosts",
            *keep_python,
            f"mount --bind {shlex.quote(str(shared))} {d}/root/shared",
            f"mount --rbind {d}/root {shlex.quote(str(home))}",
            f"mount --bind {d}/run /run",
            f"mount --bind {d}/log /var/log",
            "mkdir -m 755 /run/sshd",
            f"mount -t overlay overlay -o {layers} {prefix}",
            *keep_tmp,
            f"mount --rbind {d}/tmp /tmp",  # last: it hides the run's folder under /tmp
            f"{SSHD} -f /tmp/sshd/config -E /tmp/sshd/sshd.log",
        ]
    )
    return ["sh", "-c", script]
