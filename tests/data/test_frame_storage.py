"""Frame storage: image stacks stored frame by frame, each frame once, rebuilt byte for byte."""

import hashlib
import zlib

import msgpack
import numpy as np
import pytest

from ding_ray.data import AdvancedReplayBuffer, Batch, NaiveReplayBuffer
from ding_ray.data.file_format import decode_state, encode_state, load_state
from ding_ray.data.frame_archive import archived_frames
from ding_ray.data.frames import FrameStore, initial_frames
from ding_ray.data.storage import ColumnarRing, frame_paths_of, ring_nbytes
from ding_ray.errors import ConfigError, DataFormatError, ShapeError
from ding_ray.utils.checkpoint import buffer_bytes, load_buffer_bytes

STACK, H, W = 4, 32, 32  # 1 KiB frames: the smallest stored as frames


class Envs:
    """Frame-stacked streams of random frames, stepped in a random interleaving, with episode
    ends; ``transitions`` yields rows whose obs/next_obs stacks share frames as an env's do."""

    def __init__(self, n_envs=5, seed=0, nstep=1, zero_pad=False, episode=(5, 40)):
        self.rng = np.random.default_rng(seed)
        self.n, self.nstep, self.zero_pad, self.episode = n_envs, nstep, zero_pad, episode
        self.frames = [[] for _ in range(n_envs)]  # the current episode's frames of each env
        self.left = [0] * n_envs
        self.t = [0] * n_envs
        self.episodes = 0
        for e in range(n_envs):
            self._reset(e)

    def _reset(self, e):
        self.frames[e] = [self._frame() for _ in range(self.nstep)]
        self.left[e] = int(self.rng.integers(*self.episode))
        self.t[e] = 0
        self.episodes += 1

    def _frame(self):
        return self.rng.integers(0, 256, (H, W), dtype=np.uint8)

    def _stack(self, frames, t):
        picked = [frames[max(i, 0)] for i in range(t - STACK + 1, t + 1)]
        if self.zero_pad:
            picked = [f if i >= 0 else np.zeros_like(f) for f, i in zip(picked, range(t - STACK + 1, t + 1))]
        return np.stack(picked)

    def transitions(self, n):
        rows = []
        for _ in range(n):
            e = int(self.rng.integers(self.n))
            frames, t = self.frames[e], self.t[e]
            frames.append(self._frame())
            done = self.left[e] == 1
            nxt = min(t + self.nstep, len(frames) - 1)
            rows.append(
                {
                    "obs": self._stack(frames, t),
                    "next_obs": self._stack(frames, nxt),
                    "action": int(self.rng.integers(6)),
                    "reward": float(self.rng.normal()),
                    "done": done,
                    "env": e,
                }
            )
            self.t[e] += 1
            self.left[e] -= 1
            if done:
                self._reset(e)
        return rows


def batch_of(rows, uid0):
    batch = Batch({k: np.stack([np.asarray(r[k]) for r in rows]) for k in rows[0]})
    batch["uid"] = np.arange(uid0, uid0 + len(rows))
    return batch


def fill(buffer_or_ring, envs, pushes, rng, pushed=None):
    """Push ``pushes`` batches of random sizes; returns every pushed row by uid."""
    pushed = [] if pushed is None else pushed
    for _ in range(pushes):
        rows = envs.transitions(int(rng.integers(1, 40)))
        batch = batch_of(rows, len(pushed))
        pushed.extend(rows)
        if isinstance(buffer_or_ring, ColumnarRing):
            buffer_or_ring.write(batch, len(rows))
        else:
            buffer_or_ring.push(batch)
    return pushed


def assert_exact(batch, pushed):
    assert batch["obs"].dtype == np.uint8 and batch["obs"].shape[1:] == pushed[0]["obs"].shape
    for i, uid in enumerate(batch["uid"]):
        assert np.array_equal(batch["obs"][i], pushed[uid]["obs"])
        assert np.array_equal(batch["next_obs"][i], pushed[uid]["next_obs"])
        assert batch["action"][i] == pushed[uid]["action"]


class SlotsArchive:
    """A frame archive that keeps nothing: inside ``archived_frames`` with it, a ring's state holds
    its frame fields' ids as they are, the slots of its frame store (as a run checkpoint saves them)."""

    def save(self, store):
        return {"slots": store.capacity}

    def load_into(self, manifest, out):
        raise AssertionError("SlotsArchive keeps no frames")

    def adopt(self, store, manifest):
        pass


def ring_state(source, slots=False) -> dict:
    """The state of a ring, or of a buffer's ring; ``slots``: its frame ids as the store's slots."""
    with archived_frames(SlotsArchive() if slots else None):
        state = source.state_dict()
    return state.get("storage", state)


def frame_ids(source) -> dict[tuple, np.ndarray]:
    """Per frame field of the ring (of a buffer), the frame ids of its held rows."""
    state = ring_state(source, slots=True)
    columns = {tuple(path): rows for path, rows in state["columns"]}
    return {tuple(p): columns[tuple(p)] for entry in state.get("frame_stores", []) for p in entry["fields"]}


def check_ring(source, pushed):
    """Every row held by ``source`` (a ring, or a buffer) is the pushed one, and the frame references
    are exactly the held rows'."""
    ring = source if isinstance(source, ColumnarRing) else ColumnarRing.from_state_dict(ring_state(source))
    held = ring.gather(ring.physical(np.arange(ring.filled)))
    assert list(held["uid"]) == list(range(len(pushed) - ring.filled, len(pushed)))
    assert_exact(held, pushed)
    (store,) = source.frame_stores
    ids = np.concatenate([ids.ravel() for ids in frame_ids(source).values()])
    assert np.array_equal(store.refs, np.bincount(ids, minlength=store.capacity))
    return store


@pytest.mark.parametrize("nstep,zero_pad", [(1, False), (3, True)])
def test_stacks_come_back_exactly_after_wraparound_each_frame_held_once(nstep, zero_pad):
    envs, rng = Envs(nstep=nstep, zero_pad=zero_pad), np.random.default_rng(1)
    ring = ColumnarRing(300)
    pushed = fill(ring, envs, 120, rng)  # ~2400 rows through 300: the ring wraps ~8 times
    assert len(pushed) > 5 * ring.capacity and ring.filled == ring.capacity
    store = check_ring(ring, pushed)
    # about one new frame per row: each row's newest frame, plus the first frames of episodes
    # (and the shared zero frame); naive columns would hold 8 frames per row
    episodes_held = sum(r["done"] for r in pushed[-ring.capacity :]) + envs.n
    assert store.held <= ring.capacity + (nstep + 1) * episodes_held + 1
    assert ring.nbytes < ring.capacity * (2 * H * W + 200)


@pytest.mark.parametrize("frame_dedup", [True, False])
def test_ring_nbytes_is_what_a_ring_allocates(frame_dedup):
    """The size checked against memory before a buffer is built is the size its first push allocates."""
    ring = ColumnarRing(300, frame_dedup)
    rows = Envs().transitions(3)
    ring.write(Batch({k: np.array([r[k] for r in rows]) for k in rows[0]}), 3)
    fields = {(s["path"][0],): (tuple(s["shape"]), np.dtype(s["dtype"])) for s in ring.schema}
    assert len(ring.frame_stores) == frame_dedup
    assert ring_nbytes(300, fields, frame_paths_of(fields, frame_dedup)) == ring.nbytes


def test_frames_are_shared_across_fields_and_streams_not_episodes():
    ring = ColumnarRing(50)
    frame = np.full((H, W), 7, np.uint8)
    other = np.full((H, W), 9, np.uint8)
    stack = np.stack([frame, frame, other, frame])
    ring.write(Batch(obs=stack[None], next_obs=stack[None][:, ::-1]), 1)
    (store,) = ring.frame_stores
    assert store.held == 2 and frame_ids(ring)[("obs",)][0].tolist() == [0, 0, 1, 0]
    got = ring.gather(np.array([0, 0]))
    assert np.array_equal(got["obs"][1], stack) and np.array_equal(got["next_obs"][0], stack[::-1])
    assert got["obs"].flags.writeable and got["obs"].base is not store.frames


def test_only_image_stacks_are_stored_as_frames_unless_asked():
    def fields(ring):
        return list(frame_ids(ring))

    batch = Batch(
        obs=np.zeros((2, 4, 84, 84), np.uint8),
        small=np.zeros((2, 4, 10, 10), np.uint8),  # MinAtar-sized frames: ids would cost more
        feat=np.zeros((2, 4, 84, 84), np.float32),
        hwc=np.zeros((2, 84, 84), np.uint8),
    )
    ring = ColumnarRing(4)
    ring.write(batch, 2)
    assert fields(ring) == [("obs",)]
    plain = ColumnarRing(4, frame_dedup=False)
    plain.write(batch, 2)
    assert fields(plain) == [] and plain.column(("obs",)).shape == (4, 4, 84, 84)
    with pytest.raises(ShapeError, match="stored as frames"):
        ring.column(("obs",))
    with pytest.raises(ConfigError, match="frame_dedup"):
        ColumnarRing(4, frame_dedup="auto")
    wide = (np.arange(2 * 4 * 84 * 84).reshape(2, 4, 84, 84) % 256).astype(np.uint16)  # cast as into a column
    ring.write(Batch(batch, obs=wide), 2)
    assert np.array_equal(ring.gather(ring.physical(np.arange(4)))["obs"][2:], wide.astype(np.uint8))
    with pytest.raises(ShapeError, match="per-item shape"):
        ring.write(Batch({k: v[:, :2] if k == "obs" else v for k, v in batch.items()}), 2)


def test_unrolls_of_stacks_are_stored_as_frames_each_held_once():
    """A row of IMPALA's ``(T, stack, H, W)`` unrolls holds T overlapping stacks: ``T + stack - 1``
    distinct frames, each stored once (not ``T * stack * 2`` with next_obs), rebuilt exactly."""
    T, stack, rows = 8, 4, 5
    rng = np.random.default_rng(3)
    frames = rng.integers(0, 255, (rows * T + stack, H, W), dtype=np.uint8)
    stacks = np.stack([frames[i : i + stack] for i in range(rows * T + 1)])  # (steps + 1, stack, H, W)
    obs = stacks[:-1].reshape(rows, T, stack, H, W)
    next_obs = stacks[1:].reshape(rows, T, stack, H, W)
    ring = ColumnarRing(rows)
    ring.write(Batch(obs=obs, next_obs=next_obs), rows)
    (store,) = ring.frame_stores
    assert store.held == rows * T + stack  # every frame of the episode once
    got = ring.gather(np.arange(rows))
    assert np.array_equal(got["obs"], obs) and np.array_equal(got["next_obs"], next_obs)
    fields = {(s["path"][0],): (tuple(s["shape"]), np.dtype(s["dtype"])) for s in ring.schema}
    assert ring_nbytes(rows, fields, frame_paths_of(fields)) == ring.nbytes


def test_fingerprint_collisions_and_unshared_frames_stay_exact(monkeypatch):
    """Every fingerprint equal: matches are checked byte for byte, so each frame gets its own
    slot; frames no stack shares overflow the reserve, and the store grows."""
    monkeypatch.setattr(FrameStore, "fingerprint", lambda self, frames: np.zeros(len(frames), np.uint64))
    envs, rng = Envs(), np.random.default_rng(2)
    ring = ColumnarRing(60)
    pushed = fill(ring, envs, 30, rng)
    store = check_ring(ring, pushed)
    assert store.capacity > initial_frames(60)  # 8 frames a row: more than the reserve


def test_prioritized_buffer_samples_updates_and_wraps():
    envs, rng = Envs(n_envs=3, seed=3), np.random.default_rng(3)
    buffer = AdvancedReplayBuffer(dict(replay_buffer_size=256, alpha=0.6))
    buffer.seed(0)
    pushed = fill(buffer, envs, 60, rng)
    for _ in range(5):
        batch = buffer.sample(64, columnar=True)
        assert_exact(batch, pushed)
        buffer.update(
            dict(
                replay_unique_id=batch["replay_unique_id"],
                replay_buffer_idx=batch["replay_buffer_idx"],
                priority=rng.uniform(0.1, 5, 64),
            )
        )
        fill(buffer, envs, 10, rng, pushed)
    items = buffer.sample(8)  # DI-engine's list of dicts
    assert all(np.array_equal(t["obs"], pushed[t["uid"]]["obs"]) for t in items)


def test_save_load_keeps_frames_compact_and_exact(tmp_path):
    envs, rng = Envs(seed=4), np.random.default_rng(4)
    buffer = AdvancedReplayBuffer(dict(replay_buffer_size=200))
    pushed = fill(buffer, envs, 40, rng)
    buffer.update(
        dict(
            replay_unique_id=[len(pushed) - 1],
            replay_buffer_idx=[buffer.state_dict()["storage"]["head"] - 1],
            priority=[9.0],
        )
    )
    path = tmp_path / "buffer.msgpack"
    buffer.save_data(str(path))
    state = load_state(str(path))
    (frames,) = [s["frames"] for s in state["storage"]["frame_stores"]]
    assert len(frames) < 1.3 * 200 and path.stat().st_size < 200 * (1.3 * H * W + 300)

    loaded = AdvancedReplayBuffer(dict(replay_buffer_size=200))
    loaded.load_data(str(path))
    check_ring(loaded, pushed)
    assert len(pushed) > 200  # full: the states' priorities are every row's
    assert np.array_equal(loaded.state_dict()["priority"], buffer.state_dict()["priority"])
    buffer.seed(5)
    loaded.seed(5)
    a, b = buffer.sample(32, columnar=True), loaded.sample(32, columnar=True)
    assert all(np.array_equal(a[k], b[k]) for k in a)
    snapshot = AdvancedReplayBuffer(dict(replay_buffer_size=200))
    load_buffer_bytes(snapshot, buffer_bytes(buffer))  # what a run checkpoint holds of the buffer actor
    check_ring(snapshot, pushed)
    more = fill(loaded, envs, 20, rng, list(pushed))  # pushes after a load share the loaded frames
    store = check_ring(loaded, more)
    assert store.held < 1.3 * 200


def test_files_without_frames_load_into_frames_and_back(tmp_path):
    envs, rng = Envs(seed=6), np.random.default_rng(6)
    plain = NaiveReplayBuffer(dict(replay_buffer_size=120, frame_dedup=False))
    pushed = fill(plain, envs, 20, rng)
    old = tmp_path / "plain.msgpack"
    plain.save_data(str(old))
    assert load_state(str(old))["storage"].get("frame_stores") is None  # written as version 1

    deduped = NaiveReplayBuffer(dict(replay_buffer_size=120))
    deduped.load_data(str(old))
    check_ring(deduped, pushed)
    new = tmp_path / "frames.msgpack"
    deduped.save_data(str(new))
    assert new.stat().st_size < old.stat().st_size / 3
    back = NaiveReplayBuffer(dict(replay_buffer_size=120, frame_dedup=False))
    back.load_data(str(new))  # a file with frames keeps them, whatever the config says
    check_ring(back, pushed)


def test_damaged_frame_states_are_refused(tmp_path):
    envs, rng = Envs(seed=7), np.random.default_rng(7)
    buffer = NaiveReplayBuffer(dict(replay_buffer_size=50))
    fill(buffer, envs, 5, rng)
    state = buffer.state_dict()
    store = state["storage"]["frame_stores"][0]
    obs_ids = next(c for c in state["storage"]["columns"] if c[0] == ["obs"])
    obs_ids[1][0, 0] = len(store["frames"])  # an id past the frames
    with pytest.raises(DataFormatError, match="outside"):
        NaiveReplayBuffer(dict(replay_buffer_size=50)).load_state_dict(state)
    obs_ids[1][0, 0] = 0
    action = next(f for f in state["storage"]["schema"] if f["path"] == ["action"])
    action["shape"] = [10**9]  # a crafted schema never sizes the ring
    with pytest.raises(DataFormatError, match="does not fit the schema"):
        NaiveReplayBuffer(dict(replay_buffer_size=50)).load_state_dict(state)
    action["shape"] = []
    store["frames"] = store["frames"][:, :3]
    with pytest.raises(DataFormatError, match="frames do not match"):
        NaiveReplayBuffer(dict(replay_buffer_size=50)).load_state_dict(state)


def test_real_pong_frames_share_all_but_one_frame_per_step():
    vector_env = pytest.importorskip("ale_py.vector_env")
    env = vector_env.AtariVectorEnv("pong", num_envs=2)
    try:
        obs, _ = env.reset(seed=0)
        ring, rows = ColumnarRing(400), []
        for _ in range(150):
            next_obs, _, term, trunc, _ = env.step(env.action_space.sample())
            rows.append((obs, next_obs))
            ring.write(Batch(obs=obs, next_obs=next_obs, done=term | trunc), 2)
            obs = next_obs
    finally:
        env.close()
    held = ring.gather(np.arange(ring.filled))
    assert np.array_equal(held["obs"], np.concatenate([o for o, _ in rows]))
    assert np.array_equal(held["next_obs"], np.concatenate([n for _, n in rows]))
    (store,) = ring.frame_stores
    assert store.held <= ring.filled + 2 * STACK  # one frame per row, plus the reset stacks
    assert ring.resident_nbytes < ring.nbytes  # the reserve's slots were never written


def test_pong_collector_to_learner_stays_uint8_and_exact():
    """The path of a (4, 84, 84) uint8 observation: env, collector (n-step DQN samples), a columnar
    batch, the prioritized buffer (read-only arrays, as from Ray's object store), a sample, the
    learner's tensors and one training step: uint8 at every stage, stacks as collected."""
    pytest.importorskip("ale_py")
    from functools import partial

    from ding_ray.data import stack_items
    from ding_ray.envs import AtariEnv, create_env_manager, get_vec_env_setting
    from ding_ray.policy import DQNPolicy
    from ding_ray.policy.common import to_tensor_batch
    from ding_ray.worker import SampleSerialCollector

    section = dict(AtariEnv.default_config(), env_id="PongNoFrameskip-v4", collector_env_num=2)
    env_fn, cfgs, _ = get_vec_env_setting(dict(section, evaluator_env_num=1))
    manager = create_env_manager(dict(type="base"), [partial(env_fn, cfg=c) for c in cfgs])
    manager.seed(0)
    policy = DQNPolicy(
        dict(model=dict(obs_shape=[4, 84, 84], action_shape=6), nstep=3, learn=dict(batch_size=16))
    )
    collector = SampleSerialCollector(dict(n_sample=64), manager, policy.collect_mode)
    try:
        data = collector.collect(policy_kwargs={"eps": 1.0})
    finally:
        collector.close()
    batch = stack_items(data)
    assert batch["obs"].dtype == batch["next_obs"].dtype == np.uint8
    batch["uid"] = np.arange(len(data))
    for column in batch.values():
        column.setflags(write=False)
    buffer = AdvancedReplayBuffer(dict(replay_buffer_size=100))
    buffer.push(batch)
    (store,) = buffer.frame_stores
    assert store.held <= len(data) + 2 * 4  # one frame a row, plus each env's first stacks
    sample = buffer.sample(16, columnar=True)
    assert_exact(sample, data)
    tensors = to_tensor_batch(sample)
    assert str(tensors["obs"].dtype) == str(tensors["next_obs"].dtype) == "torch.uint8"
    info = policy.learn_mode.forward(sample)
    assert np.isfinite(info["total_loss"])


def test_large_uint8_arrays_are_compressed_and_never_inflate_past_their_shape():
    frames = np.repeat(np.arange(64, dtype=np.uint8), 1 << 15).reshape(-1, 64, 64)  # 2 MiB
    state = {"storage": {"schema": []}, "frames": frames, "small": np.arange(10, dtype=np.uint8)}
    blob = encode_state(state, "Test")
    assert len(blob) < frames.nbytes / 50
    assert msgpack.unpackb(blob)["header"]["version"] == 2
    back = decode_state(blob)
    assert np.array_equal(back["frames"], frames) and np.array_equal(back["small"], state["small"])
    assert msgpack.unpackb(encode_state({"small": state["small"]}, "Test"))["header"]["version"] == 1

    def record(shape, chunks):
        """A buffer file whose compressed array is ``[dtype, shape, chunks]``, its checksum right."""
        outer = msgpack.unpackb(blob)
        payload = msgpack.unpackb(outer["payload"], ext_hook=msgpack.ExtType, strict_map_key=False)
        code = payload["frames"].code  # the compressed array's extension type
        payload["frames"] = msgpack.ExtType(code, msgpack.packb(["|u1", shape, chunks], use_bin_type=True))
        outer["payload"] = msgpack.packb(payload, use_bin_type=True)
        digest = hashlib.sha256(msgpack.packb(outer["header"], use_bin_type=True) + outer["payload"])
        outer["checksum"]["digest"] = digest.digest()
        return msgpack.packb(outer, use_bin_type=True)

    bomb = zlib.compress(bytes(1 << 22))  # 4 MiB of zeros, declared as 1 KiB
    for data, match in [
        (record([1024], [bomb]), "does not hold"),
        (record([1 << 22], [b"not zlib"]), "corrupt"),
        (record([1 << 25], [bomb]), "number of chunks"),
        (record([-1], [bomb]), "shape"),
    ]:
        with pytest.raises(DataFormatError, match=f"payload is invalid: .*{match}"):  # not its checksum
            decode_state(data)
