"""A ``ladderlab serve`` server in a child process: start it, read its address and tokens,
measure its CPU time, stop it (or kill it with SIGKILL). For the benchmark and the tests."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
from pathlib import Path

STARTUP_SECONDS = 120


class ServerProcess:
    """``ladderlab serve CHALLENGE --port 0 …`` as a child process; ``url`` and ``tokens`` once started.

    Everything the server writes to standard output and error is kept in ``output``.
    """

    def __init__(self, challenge: str | Path, *options: str):
        command = [sys.executable, "-m", "ladderlab", "serve", str(challenge), "--port", "0", *options]
        self.process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                        env={**os.environ, "PYTHONUNBUFFERED": "1"})
        self.output: list[str] = []
        self.tokens: dict[str, str] = {}
        self.url: str | None = None
        self._ready = threading.Event()
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()
        if not self._ready.wait(STARTUP_SECONDS) or self.url is None:
            self.kill()
            raise RuntimeError("the server did not start:\n" + "".join(self.output[-30:]))

    def _read(self) -> None:
        assert self.process.stdout is not None
        for raw in self.process.stdout:
            line = raw.decode(errors="replace")
            self.output.append(line)
            if line.startswith("  ") and ": " in line and self.url is None:
                name, _, token = line.strip().partition(": ")
                self.tokens[name] = token
            elif line.startswith("serving ") and " at http" in line:
                self.url = line.split(" at ", 1)[1].split()[0]
                self._ready.set()
            elif "Application startup complete" in line:
                self._ready.set()
        self._ready.set()

    @property
    def pid(self) -> int:
        return self.process.pid

    def cpu_seconds(self) -> float:
        """User + system CPU time of the server process so far."""
        fields = Path(f"/proc/{self.pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

    def kill(self) -> None:
        """SIGKILL: no shutdown of any kind."""
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGKILL)
        self.process.wait()
        self._reader.join(5)

    def stop(self) -> None:
        """SIGTERM, as Ctrl-C; SIGKILL if it has not ended within 10 s."""
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        self._reader.join(5)

    def __enter__(self) -> ServerProcess:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()
