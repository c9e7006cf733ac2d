"""Being a good API citizen: a client-side rate limit shared by every thread of a process that calls one endpoint.

:class:`RateLimit` is what every request waits on before it is sent:

* ``rpm`` — requests per minute, as an even spacing of request starts (one every ``60 / rpm`` seconds), so
  that many threads in flight never burst past the provider's limit;
* ``tpm`` — tokens per minute, where the endpoint reports ``usage``: a request waits while the tokens of the
  requests completed in the last 60 s reach the limit (the tokens of a request are known only once it is
  answered, so the limit holds over a minute, not per request);
* a shared pause: a 429 or 503 (with or without ``Retry-After``) pauses *every* caller of the endpoint until
  the time the server asked for, not only the thread that got it — 64 requests in flight do not each find out
  on their own.

With neither limit set and no pause it costs a lock and a clock read per request.
"""

from __future__ import annotations

import threading
import time
from collections import deque
from collections.abc import Callable

WINDOW = 60.0  # seconds of the per-minute limits


class RateLimit:
    def __init__(self, rpm: float | None = None, tpm: float | None = None,
                 clock: Callable[[], float] = time.monotonic, sleep: Callable[[float], None] = time.sleep) -> None:
        for name, value in (("rpm", rpm), ("tpm", tpm)):
            if value is not None and not value > 0:
                raise ValueError(f"{name} must be positive, not {value!r}")
        self.rpm, self.tpm = rpm, tpm
        self._clock, self._sleep = clock, sleep
        self._lock = threading.Lock()
        self._next_start = 0.0  # the earliest time the next request may start (rpm spacing)
        self._paused_until = 0.0  # a 429/503's Retry-After, for every caller
        self._used: deque[tuple[float, int]] = deque()  # (when answered, tokens) of the last WINDOW seconds
        self._used_sum = 0
        self.waited = 0.0  # seconds callers spent waiting here (all threads together)

    def acquire(self, pause: bool = True) -> None:
        """Wait until a request may be sent under the limits, and count it as sent (``pause`` False: the caller
        has just waited out the pause it set itself)."""
        while True:
            with self._lock:
                now = self._clock()
                wait = self._wait(now, pause)
                if wait <= 0:
                    if self.rpm is not None:
                        self._next_start = max(now, self._next_start) + WINDOW / self.rpm
                    return
                self.waited += wait
            self._sleep(wait)

    def _wait(self, now: float, pause: bool = True) -> float:
        wait = max(self._paused_until - now if pause else 0.0,
                   self._next_start - now if self.rpm is not None else 0.0)
        if self.tpm is not None:
            while self._used and self._used[0][0] <= now - WINDOW:
                self._used_sum -= self._used.popleft()[1]
            if self._used_sum >= self.tpm and self._used:
                wait = max(wait, self._used[0][0] + WINDOW - now)
        return wait

    def used(self, tokens: int) -> None:
        """A request was answered having used ``tokens`` (its ``usage.total_tokens``)."""
        if self.tpm is None or tokens <= 0:
            return
        with self._lock:
            self._used.append((self._clock(), int(tokens)))
            self._used_sum += int(tokens)

    def pause(self, seconds: float) -> None:
        """Every caller waits ``seconds`` from now (a server said so: 429/503 with ``Retry-After``)."""
        with self._lock:
            self._paused_until = max(self._paused_until, self._clock() + max(0.0, seconds))
