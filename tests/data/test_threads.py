import sys
import threading

import numpy as np
import pytest
from easydict import EasyDict

from ding_ray.data import AdvancedReplayBuffer, NaiveReplayBuffer
from tests.data.fakes import batch, check_consistent, transition

PUSHERS, PER_PUSHER, CHUNK = 3, 1500, 10


def check_columns(out):
    ids = out["reward"]
    assert np.all(out["obs"] == ids[:, None]) and np.all(out["next_obs"] == ids[:, None] + 1)
    assert np.all(out["action"] == ids.astype(np.int64) % 2)


@pytest.mark.parametrize("cls", [NaiveReplayBuffer, AdvancedReplayBuffer])
def test_concurrent_push_sample_update(cls):
    buf = cls(EasyDict(replay_buffer_size=PUSHERS * PER_PUSHER))
    buf.seed(0)
    buf.push(transition(-1))  # so samplers have something from the start
    errors, stop = [], threading.Event()

    def guarded(fn):
        def run(*args):
            try:
                fn(*args)
            except Exception as err:  # surfaced by the main thread
                errors.append(err)
                stop.set()

        return run

    def pusher(k):
        for start in range(k * PER_PUSHER, (k + 1) * PER_PUSHER, CHUNK):
            if (start // CHUNK) % 2:
                buf.push(batch(start, CHUNK))
            else:
                buf.push([transition(i) for i in range(start, start + CHUNK)])

    def sampler():
        while not stop.is_set():
            items = buf.sample(16, 0)
            for item in items or []:
                check_consistent(item)
            out = buf.sample(16, 0, columnar=True)
            if out is not None:
                check_columns(out)

    def updater():
        rng = np.random.default_rng(1)
        while not stop.is_set():
            out = buf.sample(16, 0, columnar=True)
            if out is not None:
                check_columns(out)
                info = {k: out[k] for k in ("replay_unique_id", "replay_buffer_idx")} if "IS" in out else {}
                buf.update(dict(info, priority=rng.random(16) + 0.1) if info else {})

    old = sys.getswitchinterval()
    sys.setswitchinterval(1e-5)  # switch threads often to provoke interleavings
    try:
        threads = [threading.Thread(target=guarded(pusher), args=(k,)) for k in range(PUSHERS)]
        others = [threading.Thread(target=guarded(sampler)), threading.Thread(target=guarded(updater))]
        for t in threads + others:
            t.start()
        for t in threads:
            t.join()
        stop.set()
        for t in others:
            t.join()
    finally:
        sys.setswitchinterval(old)
    assert not errors, errors
    total = PUSHERS * PER_PUSHER
    assert buf.push_count == total + 1 and buf.count() == total  # the first item was overwritten
    state = buf.state_dict()
    rewards = [rows for path, rows in state["storage"]["columns"] if path == ["reward"]][0]
    assert sorted(rewards.astype(int).tolist()) == list(range(total))  # nothing lost, nothing twice
