"""``RateLimiter``: keep the replay ratio (samples per inserted item) fixed, whatever the speeds.

Without it the replay ratio of an asynchronous pipeline is an accident of the hardware: a fast
learner over-trains on few transitions, fast collectors flood the buffer with data nobody learns
from. The limiter follows Reverb's ``SampleToInsertRatio``: after ``min_size_to_sample`` items
the learner may have sampled ``samples_per_insert`` items for every item inserted since, give or
take ``tolerance`` items either way. Whoever is ahead is asked to wait.

The calling loop of a driver::

    if limiter.can_insert(n):
        limiter.reserve_insert(n)          # a collect call of n items is launched
    ...                                    # when it returns:
    limiter.commit_insert(n)               # or cancel_insert(n) if the collector died
    if limiter.can_sample(m):
        limiter.sample(m)                  # a sample call of m items is launched

``backpressure`` says who waits:

- ``'ratio'`` (Ape-X, and the default): both sides, as above; the replay ratio is the serial
  pipeline's whatever the speeds.
- ``'block'`` (IMPALA): only the collectors. The learner trains whenever the buffer has
  ``min_size_to_sample`` items (it reuses items up to the buffer's ``max_use``); the collectors
  wait once they are ``tolerance`` sampled items (``tolerance / samples_per_insert`` inserted
  items) ahead of the learner: a bounded queue.
- ``'drop'``: nobody. The collectors never wait, the buffer drops its oldest items when full,
  and a driver drops batches its buffer cannot take in time.
"""

from __future__ import annotations

from ding_ray.errors import ConfigError

BACKPRESSURE = ("ratio", "block", "drop")


class RateLimiter:
    """Counts items inserted (committed and in flight) and sampled; answers who may go next."""

    def __init__(
        self,
        samples_per_insert: float,
        min_size_to_sample: int,
        tolerance: float,
        backpressure: str = "ratio",
    ) -> None:
        if samples_per_insert <= 0:
            raise ConfigError(f"samples_per_insert must be > 0, got {samples_per_insert}.")
        if min_size_to_sample < 1:
            raise ConfigError(f"min_size_to_sample must be >= 1, got {min_size_to_sample}.")
        if tolerance < 0:
            raise ConfigError(f"The rate limiter's tolerance must be >= 0, got {tolerance}.")
        if backpressure not in BACKPRESSURE:
            raise ConfigError(
                f"ray.backpressure must be one of {', '.join(map(repr, BACKPRESSURE))}, got {backpressure!r}."
            )
        self.backpressure = backpressure
        self.samples_per_insert = float(samples_per_insert)
        self.min_size_to_sample = int(min_size_to_sample)
        self.tolerance = float(tolerance)
        self.inserted = 0  # items whose insertion finished
        self.pending = 0  # items of insert calls in flight
        self.sampled = 0  # items of sample calls launched

    def check_chunks(self, insert_size: int, sample_size: int) -> None:
        """Raise ``ConfigError`` if calls of these sizes could leave both sides waiting forever."""
        need = max(sample_size, self.samples_per_insert * insert_size)
        if self.tolerance < need:
            raise ConfigError(
                f"The rate limiter's tolerance ({self.tolerance:g} items) must be at least "
                f"max(sample size {sample_size}, samples_per_insert x insert size "
                f"{self.samples_per_insert:g} x {insert_size}) = {need:g}, or the pipeline can deadlock. "
                "Raise ray.samples_per_insert_tolerance or leave it None."
            )

    def _target(self, inserted: float) -> float:
        """Samples the ratio allows after ``inserted`` items."""
        return self.samples_per_insert * (inserted - self.min_size_to_sample)

    def can_insert(self, n: int) -> bool:
        """Whether an insert of ``n`` items keeps the learner within ``tolerance`` of the ratio."""
        after = self.inserted + self.pending + n
        if after <= self.min_size_to_sample or self.backpressure == "drop":
            return True
        return self._target(after) - self.sampled <= self.tolerance

    def can_sample(self, n: int) -> bool:
        if self.inserted < self.min_size_to_sample:
            return False
        if self.backpressure != "ratio":  # the learner never waits for the collectors
            return True
        return self.sampled + n - self._target(self.inserted) <= self.tolerance

    def reserve_insert(self, n: int) -> None:
        self.pending += n

    def commit_insert(self, n: int, reserved: int | None = None) -> None:
        """An insert finished with ``n`` items (``reserved`` were reserved for it; default ``n``)."""
        self.pending -= n if reserved is None else reserved
        self.inserted += n

    def cancel_insert(self, n: int) -> None:
        """A reserved insert never happened (the collector died)."""
        self.pending -= n

    def sample(self, n: int) -> None:
        self.sampled += n

    def cancel_sample(self, n: int) -> None:
        """A sample call returned nothing; its items do not count."""
        self.sampled -= n

    @property
    def error(self) -> float:
        """Samples taken minus samples the ratio allows (0 = on target; bounded by ``tolerance``)."""
        return self.sampled - max(0.0, self._target(self.inserted))

    def samples_per_insert_now(self) -> float:
        """Measured ratio over the items inserted after ``min_size_to_sample``."""
        return self.sampled / max(self.inserted - self.min_size_to_sample, 1)

    def state(self) -> dict[str, float]:
        return {"inserted": self.inserted, "pending": self.pending, "sampled": self.sampled}
