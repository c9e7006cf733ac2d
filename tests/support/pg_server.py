"""A throwaway PostgreSQL server for tests: a fresh cluster in a temp dir, listening on 127.0.0.1.

``find_bindir()`` locates the server binaries (``initdb`` and ``postgres``): ``$UFUZZ_PG_BINDIR``, then
``initdb`` on ``PATH``, then ``pg_config --bindir``, then Debian's ``/usr/lib/postgresql/<ver>/bin`` (the
highest version). ``running_postgres()`` initdbs a cluster in a new temporary directory, starts
``postgres`` on 127.0.0.1 on a free port (its unix socket goes to the same directory, never to
``/var/run/postgresql``), waits until it accepts connections and, on exit, shuts it down (fast shutdown,
then SIGKILL after 30 s) and removes the directory.

initdb and postgres refuse to run as root. Run as root, both are started as an unprivileged account —
``$UFUZZ_PG_USER``, else ``postgres`` (Debian's package creates it), else ``nobody`` — with the directory
chowned to it (``subprocess``'s ``user=``/``group=``, supplementary groups dropped). On Linux the server
also gets a fast shutdown when the test process dies without cleaning up (``PR_SET_PDEATHSIG``).
Authentication is ``trust`` for the superuser ``ufuzz``; the server only listens on loopback and in its own
directory.

Fsync and synchronous commit are off and the buffers small: the data is thrown away, and the tests share
the machine with other jobs.
"""

from __future__ import annotations

import os
import pwd
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

SUPERUSER = "ufuzz"
INSTALL_HINT = ("install them with `apt-get install -y --no-install-recommends postgresql` "
                "(`make test` tries that through scripts/install_postgres.sh) or point UFUZZ_PG_BINDIR at "
                "the folder holding initdb and postgres")


def _has_server(folder: Path) -> bool:
    return (folder / "initdb").is_file() and (folder / "postgres").is_file()


def _version_key(folder: Path) -> tuple[int, ...]:
    return tuple(int(x) for x in re.findall(r"\d+", folder.parent.name)) or (0,)


def find_bindir() -> tuple[Path | None, str]:
    """The folder holding ``initdb`` and ``postgres``, or None and a reason that says how to get them."""
    env = os.environ.get("UFUZZ_PG_BINDIR")
    if env:
        if _has_server(Path(env)):
            return Path(env), ""
        return None, f"UFUZZ_PG_BINDIR={env} holds no initdb and postgres; {INSTALL_HINT}"
    candidates: list[Path] = []
    on_path = shutil.which("initdb")
    if on_path:
        candidates.append(Path(on_path).resolve().parent)
    pg_config = shutil.which("pg_config")
    if pg_config:
        try:
            out = subprocess.run([pg_config, "--bindir"], capture_output=True, text=True, timeout=10)
            if out.returncode == 0 and out.stdout.strip():
                candidates.append(Path(out.stdout.strip()))
        except (OSError, subprocess.SubprocessError):
            pass
    candidates += sorted(Path("/usr/lib/postgresql").glob("*/bin"), key=_version_key, reverse=True)
    for c in candidates:
        if _has_server(c):
            return c, ""
    return None, ("PostgreSQL server binaries not found (looked for initdb and postgres on PATH, in "
                  f"`pg_config --bindir` and /usr/lib/postgresql/*/bin); {INSTALL_HINT}")


def _server_account() -> pwd.struct_passwd | None:
    """The unprivileged account to run the server as (None: we are not root, run as ourselves)."""
    if os.geteuid() != 0:
        return None
    wanted = os.environ.get("UFUZZ_PG_USER")
    for name in ([wanted] if wanted else ["postgres", "nobody"]):
        try:
            return pwd.getpwnam(name)
        except KeyError:
            continue
    raise RuntimeError(f"running as root and no unprivileged account to run PostgreSQL as "
                       f"(tried {wanted or 'postgres, nobody'}; set UFUZZ_PG_USER)")


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@dataclass
class PgServer:
    bindir: Path
    root: Path  # the temporary directory: data/, the log and the unix socket
    port: int
    host: str = "127.0.0.1"
    user: str = SUPERUSER
    version: str = ""
    databases: list[str] = field(default_factory=list)

    @property
    def log_path(self) -> Path:
        return self.root / "server.log"

    def url(self, dbname: str = "postgres", driver: str = "psycopg") -> str:
        """A SQLAlchemy URL for ``dbname`` on this server."""
        return f"postgresql+{driver}://{self.user}@{self.host}:{self.port}/{dbname}"

    def connect(self, dbname: str = "postgres"):
        import psycopg

        return psycopg.connect(host=self.host, port=self.port, user=self.user, dbname=dbname,
                               autocommit=True, connect_timeout=10)

    def create_database(self, name: str, *, icu_locale: str | None = None) -> str:
        """Create database ``name`` (optionally with an ICU collation, e.g. ``en-US``, as a team database
        created with a linguistic locale would have) and return its SQLAlchemy URL."""
        if not re.fullmatch(r"[a-z_][a-z0-9_]*", name):
            raise ValueError(f"database name {name!r}: use lower-case letters, digits and _")
        extra = ""
        if icu_locale is not None:
            extra = f" TEMPLATE template0 LOCALE_PROVIDER icu ICU_LOCALE '{icu_locale}' LOCALE 'C'"
        with self.connect() as con:
            con.execute(f"CREATE DATABASE {name}{extra}")
        self.databases.append(name)
        return self.url(name)

    def log_tail(self, lines: int = 20) -> str:
        try:
            return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return "(no server log)"


def _libc():
    try:
        import ctypes

        return ctypes.CDLL(None, use_errno=True)
    except (ImportError, OSError):
        return None


_LIBC = _libc() if sys.platform.startswith("linux") else None


def _die_with_parent() -> None:
    # Linux: if the test process is killed outright, the server gets a fast shutdown instead of lingering.
    # Runs in the child after the user switch (a credential change would clear it); nothing to import here.
    _LIBC.prctl(1, int(signal.SIGINT))  # PR_SET_PDEATHSIG


def _run_as(account: pwd.struct_passwd | None, cmd: list[str], cwd: Path, env: dict[str, str],
            **kw) -> subprocess.Popen:
    drop = {} if account is None else {"user": account.pw_uid, "group": account.pw_gid, "extra_groups": []}
    if _LIBC is not None:
        drop["preexec_fn"] = _die_with_parent
    return subprocess.Popen(cmd, cwd=cwd, env=env, **drop, **kw)


def _wait_ready(proc: subprocess.Popen, data: Path, timeout: float) -> bool:
    """True once postmaster.pid says "ready" (what ``pg_ctl -w`` waits for); False if postgres exited."""
    deadline = time.monotonic() + timeout
    pidfile = data / "postmaster.pid"
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            return False
        try:
            lines = pidfile.read_text().splitlines()
        except OSError:
            lines = []
        if len(lines) >= 8 and lines[7].strip() == "ready":
            return True
        time.sleep(0.1)
    raise TimeoutError(f"PostgreSQL did not become ready within {timeout:.0f} s")


def _stop(proc: subprocess.Popen) -> None:
    if proc.poll() is not None:
        return
    proc.send_signal(signal.SIGINT)  # fast shutdown: roll back sessions, checkpoint, exit
    try:
        proc.wait(timeout=30)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait(timeout=10)


@contextmanager
def running_postgres(settings: dict[str, str] | None = None, *, bindir: Path | None = None,
                     ready_timeout: float = 60.0) -> Iterator[PgServer]:
    """Start a throwaway server (``settings`` are extra ``-c name=value`` server settings), yield it,
    stop it and remove its directory. Raises ``FileNotFoundError`` (with the reason of
    :func:`find_bindir`) when there are no server binaries, ``RuntimeError`` with the initdb output or
    the server log when it cannot start."""
    if bindir is None:
        bindir, why = find_bindir()
        if bindir is None:
            raise FileNotFoundError(why)
    account = _server_account()
    root = Path(tempfile.mkdtemp(prefix="ufuzz-pg-"))
    proc: subprocess.Popen | None = None
    try:
        if account is not None:
            os.chown(root, account.pw_uid, account.pw_gid)
        data = root / "data"
        # a clean environment: no PGDATA/PGPORT/locale settings of the caller leak into the cluster
        env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "LANG": "C", "LC_ALL": "C", "HOME": str(root)}
        init = _run_as(account, [str(bindir / "initdb"), "-D", str(data), "-U", SUPERUSER, "--auth=trust",
                                 "-E", "UTF8", "--locale=C", "--no-sync"],
                       root, env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        out, _ = init.communicate(timeout=300)
        if init.returncode != 0:
            who = f" as {account.pw_name}" if account else ""
            raise RuntimeError(f"initdb{who} failed (exit {init.returncode}):\n{out.strip()}")
        version = subprocess.run([str(bindir / "postgres"), "--version"], capture_output=True,
                                 text=True).stdout.strip()
        conf = {"fsync": "off", "synchronous_commit": "off", "full_page_writes": "off",
                "shared_buffers": "16MB", "max_connections": "40", "logging_collector": "off",
                **(settings or {})}
        for _attempt in range(3):  # a free port can be taken between picking and binding it
            port = _free_port()
            server = PgServer(bindir=bindir, root=root, port=port, version=version)
            cmd = [str(bindir / "postgres"), "-D", str(data), "-h", "127.0.0.1", "-p", str(port),
                   "-k", str(root)]
            for k, v in conf.items():
                cmd += ["-c", f"{k}={v}"]
            log = server.log_path.open("ab")
            try:
                proc = _run_as(account, cmd, root, env, stdout=log, stderr=subprocess.STDOUT,
                               stdin=subprocess.DEVNULL)
            finally:
                log.close()
            if _wait_ready(proc, data, ready_timeout):
                break
            if "could not bind" not in server.log_tail(40) and "in use" not in server.log_tail(40):
                raise RuntimeError(f"PostgreSQL ({version}) exited with {proc.returncode} on start:\n"
                                   f"{server.log_tail()}")
            proc = None
        else:
            raise RuntimeError(f"PostgreSQL could not bind a free port on 127.0.0.1:\n{server.log_tail()}")
        yield server
    finally:
        if proc is not None:
            _stop(proc)
        shutil.rmtree(root, ignore_errors=True)
