"""Drivers for the live systems the compat tests and tools/make_compat_vectors.py
compare against: a redis-server answering CLUSTER KEYSLOT, and twemproxy
(nutcracker) placing keys over redis-servers.  Each starts private processes
on loopback or a unix socket and stops them afterwards."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from functools import partial
from pathlib import Path


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def resp(sock: socket.socket, cmds: list[list[bytes]]) -> list[bytes]:
    """Send RESP commands in one batch; the first line of each reply."""
    buf = bytearray()
    for c in cmds:
        buf += b"*%d\r\n" % len(c)
        for a in c:
            buf += b"$%d\r\n" % len(a) + a + b"\r\n"
    sock.sendall(bytes(buf))
    data = b""
    while data.count(b"\r\n") < len(cmds):
        chunk = sock.recv(1 << 16)
        if not chunk:
            raise RuntimeError("connection closed")
        data += chunk
    return data.split(b"\r\n")[: len(cmds)]


def keyslots(sock: socket.socket, keys: list[bytes]) -> list[int]:
    """CLUSTER KEYSLOT of each key, pipelined."""
    buf = bytearray()
    for k in keys:
        buf += b"*3\r\n$7\r\nCLUSTER\r\n$7\r\nKEYSLOT\r\n$%d\r\n" % len(k) + k + b"\r\n"
    sock.sendall(bytes(buf))
    out: list[int] = []
    data = b""
    while len(out) < len(keys):
        chunk = sock.recv(1 << 16)
        if not chunk:
            raise RuntimeError("redis closed the connection")
        data += chunk
        *lines, data = data.split(b"\r\n")
        for line in lines:
            if not line.startswith(b":"):
                raise RuntimeError(f"unexpected reply {line!r}")
            out.append(int(line[1:]))
    return out


def _accepts(port: int) -> bool:
    try:
        socket.create_connection(("127.0.0.1", port), timeout=1).close()
    except OSError:
        return False
    return True


def _daemon_pid(pidfile: Path, *, ready: Callable[[], bool], timeout: float = 60.0) -> int:
    """The pid a daemonised server wrote to ``pidfile`` once it is ``ready``.
    A loaded machine may take seconds to start it, and the file can exist
    before its number is written: wait for both, then fail clearly."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            text = pidfile.read_text().strip()
        except OSError:
            text = ""
        if text.isdigit() and ready():
            return int(text)
        if time.monotonic() > deadline:
            raise RuntimeError(f"server not ready after {timeout:.0f} s (pid file {pidfile.name}: {text!r})")
        time.sleep(0.05)


@contextmanager
def cluster_redis(server: str) -> Iterator[str]:
    """A cluster-enabled ``server`` (redis-server) on a private unix socket,
    without persistence; yields the socket's path."""
    tmp = tempfile.mkdtemp(prefix="shardhash-redis-")
    path = f"{tmp}/redis.sock"
    subprocess.run([server, "--port", "0", "--bind", "127.0.0.1", "--cluster-port", str(free_port()),
                    "--unixsocket", path, "--cluster-enabled", "yes",
                    "--cluster-config-file", f"{tmp}/nodes.conf", "--dir", tmp, "--save", "",
                    "--appendonly", "no", "--daemonize", "yes", "--pidfile", f"{tmp}/redis.pid",
                    "--logfile", f"{tmp}/redis.log"], check=True)
    pid = _daemon_pid(Path(f"{tmp}/redis.pid"), ready=lambda: os.path.exists(path))
    try:
        yield path
    finally:
        os.kill(pid, 15)
        time.sleep(0.1)
        shutil.rmtree(tmp, ignore_errors=True)


def twemproxy_placement(keys: list[bytes], key_hash: str, weights: list[int],
                        workdir: Path) -> tuple[list[str], list[int]]:
    """Where a live nutcracker (ketama, ``hash: key_hash``, ``redis: true``)
    stores each key over one redis-server per weight on loopback: the servers
    (``127.0.0.1:port``, in configuration order) and each key's server index
    (-1 where no server holds it)."""
    ports = [free_port() for _ in weights]
    pids: list[int] = []
    try:
        for p in ports:
            subprocess.run(["redis-server", "--port", str(p), "--bind", "127.0.0.1", "--save", "",
                            "--appendonly", "no", "--daemonize", "yes", "--dir", str(workdir),
                            "--pidfile", f"{workdir}/r{p}.pid", "--logfile", f"{workdir}/r{p}.log"], check=True)
        for p in ports:
            pids.append(_daemon_pid(workdir / f"r{p}.pid", ready=partial(_accepts, p)))
        listen = free_port()
        conf = (f"pool:\n  listen: 127.0.0.1:{listen}\n  hash: {key_hash}\n  distribution: ketama\n"
                "  redis: true\n  auto_eject_hosts: false\n  servers:\n"
                + "".join(f"   - 127.0.0.1:{p}:{w}\n" for p, w in zip(ports, weights)))
        (workdir / "nutcracker.yml").write_text(conf)
        proxy = subprocess.Popen(["nutcracker", "-c", str(workdir / "nutcracker.yml"),
                                  "-o", str(workdir / "nutcracker.log")])
        try:
            for _ in range(200):
                try:
                    s = socket.create_connection(("127.0.0.1", listen), timeout=30)
                    break
                except OSError:
                    time.sleep(0.05)
            else:
                raise RuntimeError("nutcracker did not start: " + (workdir / "nutcracker.log").read_text()[-500:])
            with s:
                replies = resp(s, [[b"SET", k, b"1"] for k in keys])
                if not all(r == b"+OK" for r in replies):
                    raise RuntimeError(f"SET through nutcracker failed: {replies[:3]}")
        finally:
            proxy.terminate()
            proxy.wait()
        owner = [-1] * len(keys)
        for i, p in enumerate(ports):
            with socket.create_connection(("127.0.0.1", p), timeout=30) as c:
                for j, r in enumerate(resp(c, [[b"EXISTS", k] for k in keys])):
                    if r == b":1":
                        owner[j] = i
        return [f"127.0.0.1:{p}" for p in ports], owner
    finally:
        for pid in pids:
            os.kill(pid, 15)
