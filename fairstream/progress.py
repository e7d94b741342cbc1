"""One overall progress display for a job whose total size is known up front (input bytes).

On a terminal it is one tqdm bar whose ETA uses the average rate since the start (tqdm's default
moving average starts from the first, slow model batch and promises hours for a minute's run) and
which stays on screen at the end. When stderr is not a terminal (a log file, CI) it writes a plain
line at most every ``interval`` seconds and a final line: no carriage returns.
"""

from __future__ import annotations

import sys
import time
from typing import IO, Any


def _mb(n: float) -> str:
    return f"{n / 1e6:,.1f} MB"


def _clock(seconds: float) -> str:
    s = int(seconds)
    return f"{s // 3600}:{s // 60 % 60:02d}:{s % 60:02d}" if s >= 3600 else f"{s // 60}:{s % 60:02d}"


class Progress:
    """Progress of ``total`` bytes, ``done`` of them finished before this run (a resumed job)."""

    def __init__(
        self,
        total: int,
        *,
        done: int = 0,
        desc: str = "fairstream",
        enabled: bool = True,
        file: IO[str] | None = None,
        interval: float = 30.0,
    ) -> None:
        self.total, self.n, self.start_n = total, float(done), float(done)
        self.desc, self.interval = desc, interval
        self.file = file if file is not None else sys.stderr
        self.enabled = enabled
        self._t0 = self._last = time.monotonic()
        self._bar: Any = None
        self._note = ""
        if enabled and self.file.isatty():
            from tqdm import tqdm

            self._bar = tqdm(
                total=total,
                initial=done,
                desc=desc,
                unit="B",
                unit_scale=True,
                smoothing=0,  # ETA from the average rate since the start
                leave=True,
                file=self.file,
                dynamic_ncols=True,
            )

    def advance(self, n_bytes: float) -> None:
        """Count ``n_bytes`` more of the input as done."""
        self.n += n_bytes
        if self._bar is not None:
            self._bar.update(n_bytes)
        elif self.enabled and time.monotonic() - self._last >= self.interval:
            self._last = time.monotonic()
            self._line()

    def note(self, text: str) -> None:
        """Show what is being worked on (e.g. the current shard) beside the bar (and in plain lines)."""
        self._note = text
        if self._bar is not None:
            self._bar.set_postfix_str(text, refresh=False)

    def _line(self) -> None:
        elapsed = time.monotonic() - self._t0
        share = self.n / self.total if self.total else 1.0
        rate = (self.n - self.start_n) / elapsed if elapsed > 0 else 0.0
        eta = f", about {_clock((self.total - self.n) / rate)} left" if rate > 0 else ""
        note = f", {self._note}" if self._note else ""
        print(
            f"{self.desc}: {_mb(self.n)} of {_mb(self.total)} ({share:.0%}){note}, {_clock(elapsed)} elapsed{eta}",
            file=self.file,
            flush=True,
        )

    def close(self) -> None:
        """Finish: the bar stays on screen; elsewhere one final line."""
        if self._bar is not None:
            self._bar.close()
        elif self.enabled:
            elapsed = time.monotonic() - self._t0
            note = f" ({self._note})" if self._note else ""
            print(f"{self.desc}: {_mb(self.n)}{note} done in {_clock(elapsed)}", file=self.file, flush=True)
