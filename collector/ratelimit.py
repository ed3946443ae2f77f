"""Upload rate limits per client address, in memory only (docs/collector.md#upload).

A token bucket per address: ``rate`` requests per second on average, bursts
of ``burst``. Addresses live only in this process's memory, idle buckets are
dropped, and the table never holds more than ``max_addresses`` entries (the
longest idle go first), so the limiter keeps nothing about senders and
cannot be grown without bound.
"""

from __future__ import annotations

import threading
import time
from collections import OrderedDict
from collections.abc import Callable

__all__ = ["RateLimiter"]


class RateLimiter:
    """Token buckets keyed by client address.

    Parameters
    ----------
    rate : float
        Requests per second each address may sustain; 0 turns limiting off.
    burst : float
        Requests an idle address may send at once (default: two seconds' worth, at least 10).
    max_addresses : int
        The most addresses tracked at once.
    clock : callable
        Seconds on a monotonic clock (default :func:`time.monotonic`): the buckets refill as it advances.
    """

    def __init__(
        self,
        rate: float,
        burst: float | None = None,
        max_addresses: int = 100_000,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        if rate < 0:
            raise ValueError(f"rate must be >= 0, got {rate}")
        self.rate = float(rate)
        self.burst = float(burst) if burst is not None else max(10.0, 2.0 * self.rate)
        self.max_addresses = max_addresses
        self.clock = clock
        self._buckets: OrderedDict[str, tuple[float, float]] = OrderedDict()  # address -> (tokens, last time)
        self._lock = threading.Lock()

    def allow(self, address: str, now: float | None = None) -> bool:
        """Take one token for ``address``; False when its bucket is empty."""
        if self.rate == 0:
            return True
        now = self.clock() if now is None else now
        with self._lock:
            tokens, last = self._buckets.pop(address, (self.burst, now))
            tokens = min(self.burst, tokens + (now - last) * self.rate)
            allowed = tokens >= 1.0
            self._buckets[address] = (tokens - 1.0 if allowed else tokens, now)  # most recent last
            while len(self._buckets) > self.max_addresses:
                self._buckets.popitem(last=False)
            return allowed

    def retry_after(self) -> int:
        """Whole seconds after which an emptied bucket holds a token again."""
        return max(1, int(1.0 / self.rate + 0.999)) if self.rate else 0
