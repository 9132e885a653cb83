"""``RateLimiter``: keep the replay ratio (samples per inserted item) fixed, whatever the speeds.

Without it the replay ratio of an asynchronous pipeline is an accident of the hardware: a fast
learner over-trains on few transitions, fast collectors flood the buffer with data nobody learns
from. The limiter follows Reverb's ``SampleToInsertRatio``: after ``min_size_to_sample`` items
the learner may have sampled ``samples_per_insert`` items for every item inserted since, give or
take ``tolerance`` items either way. Whoever is ahead is asked to wait. The limiter also bounds the
sample calls the learner has not finished training on (``max_in_flight``): it is the one owner of
what is inserted, sampled and in flight.

The calling loop of a driver::

    if limiter.can_insert(n):
        limiter.reserve_insert(n)          # a collect call of n items is launched
    ...                                    # when it returns:
    limiter.commit_insert(n)               # or cancel_insert(n) if the collector died
    if limiter.start_sample(m):            # a sample call of m items may be launched
        ...                                # when the learner has trained on it:
        limiter.sample_done(m, trained)

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
        max_in_flight: int | None = None,
    ) -> None:
        """``max_in_flight``: sample calls launched and not yet trained on, at most; None: no bound."""
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
        self.max_in_flight = max_in_flight
        self.in_flight = 0  # sample calls the learner has not finished training on
        self.learner_waits = 0  # times the learner ran dry because the inserts were behind

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

    def wants_sample(self, n: int) -> bool:
        """Whether a sample call of ``n`` items may be launched now: the learner has room for it
        and the ratio allows it."""
        return (self.max_in_flight is None or self.in_flight < self.max_in_flight) and self.can_sample(n)

    def start_sample(self, n: int) -> bool:
        """Count a sample call of ``n`` items and return True if ``wants_sample``; else False,
        counting a wait of a learner with nothing in flight on the inserts."""
        if self.max_in_flight is not None and self.in_flight >= self.max_in_flight:
            return False
        if not self.can_sample(n):
            self.learner_waits += not self.in_flight and self.inserted >= self.min_size_to_sample
            return False
        self.sample(n)
        self.in_flight += 1
        return True

    def sample_done(self, n: int, trained: bool) -> None:
        """The learner finished a call on a sample of ``n`` items (``trained``: not an empty one)."""
        self.in_flight -= 1
        if not trained:
            self.cancel_sample(n)

    def restore(self, state: dict | None) -> None:
        """Go on from the counters of a checkpoint's ``state()`` (a resumed run)."""
        self.inserted = int((state or {}).get("inserted", 0))
        self.sampled = int((state or {}).get("sampled", 0))

    @property
    def error(self) -> float:
        """Samples taken minus samples the ratio allows (0 = on target; bounded by ``tolerance``)."""
        return self.sampled - max(0.0, self._target(self.inserted))

    def samples_per_insert_now(self) -> float:
        """Measured ratio over the items inserted after ``min_size_to_sample``."""
        return self.sampled / max(self.inserted - self.min_size_to_sample, 1)

    def state(self) -> dict[str, float]:
        return {"inserted": self.inserted, "pending": self.pending, "sampled": self.sampled}
