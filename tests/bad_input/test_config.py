"""Bad configs: unknown and misspelled keys, wrong types, sizes below 1, a batch larger than the
replay buffer, unknown env ids and component types. Each is refused before anything runs, by an
error that names the key and says what to write instead."""

import math
import os

import numpy as np
import pytest
from easydict import EasyDict

import tests.bad_input.envs  # noqa: F401 - registers the BadInput* envs
from ding_ray.config import compile_config
from ding_ray.configs import load_config
from ding_ray.data import AdvancedReplayBuffer, NaiveReplayBuffer
from ding_ray.entry import serial_pipeline
from ding_ray.errors import ConfigError, EnvError, RegistryError
from ding_ray.utils.memory import system_memory
from tests.bad_input.configs import CREATE, small_main


def compile_with(create=CREATE, **over):
    return compile_config(small_main(**over), seed=0, auto=True, create_cfg=create, save_cfg=False)


@pytest.mark.parametrize(
    "over, key, suggestion",
    [
        (dict(polcy=dict()), "'polcy'", "'policy'"),
        (
            dict(policy=dict(learn=dict(learning_rat=0.1))),
            "'policy.learn.learning_rat'",
            "'policy.learn.learning_rate'",
        ),
        (dict(policy=dict(colect=dict())), "'policy.colect'", "'policy.collect'"),
        (dict(env=dict(collector_env_nums=3)), "'env.collector_env_nums'", "'env.collector_env_num'"),
        (
            dict(env=dict(manager=dict(step_timout=1.0))),
            "'env.manager.step_timout'",
            "'env.manager.step_timeout'",
        ),
        (
            dict(policy=dict(other=dict(replay_buffer=dict(replay_buffer_sise=10)))),
            "'policy.other.replay_buffer.replay_buffer_sise'",
            "'policy.other.replay_buffer.replay_buffer_size'",
        ),
        (
            dict(policy=dict(eval=dict(evaluator=dict(eval_frq=10)))),
            "'policy.eval.evaluator.eval_frq'",
            "eval_freq",
        ),
    ],
)
def test_misspelled_keys_name_the_key_and_the_close_match(over, key, suggestion):
    with pytest.raises(ConfigError) as err:
        compile_with(**over)
    message = str(err.value)
    assert f"Unknown config key {key}" in message and "Did you mean" in message and suggestion in message


@pytest.mark.parametrize(
    "over, key, suggestion",
    [
        (dict(policy=dict(batch_size=32)), "policy.batch_size", "'policy.learn.batch_size'"),
        (dict(learning_rate=1e-3), "learning_rate", "'policy.learn.learning_rate'"),
        (dict(env=dict(n_sample=16)), "env.n_sample", "'policy.collect.n_sample'"),
        (
            dict(policy=dict(learn=dict(eval_freq=5))),
            "policy.learn.eval_freq",
            "'policy.eval.evaluator.eval_freq'",
        ),
    ],
)
def test_a_key_at_the_wrong_level_suggests_where_it_belongs(over, key, suggestion):
    with pytest.raises(ConfigError) as err:
        compile_with(**over)
    assert str(err.value).startswith(f"Unknown config key '{key}'. Did you mean {suggestion}")


def test_a_key_with_no_close_match_lists_the_valid_keys():
    with pytest.raises(
        ConfigError, match=r"Unknown config key 'policy\.zzz'\. Valid keys in 'policy': \[.*'learn'"
    ):
        compile_with(policy=dict(zzz=1))


def test_misspelled_model_keys_are_refused_when_the_model_is_built(tmp_path):
    os.chdir(tmp_path)
    main = small_main("model_key", policy=dict(model=dict(encoder_hidden_size=[16])))
    with pytest.raises(
        ConfigError,
        match=r"'policy\.model\.encoder_hidden_size'.*Did you mean 'policy\.model\.encoder_hidden_size_list'",
    ):
        serial_pipeline((main, CREATE), max_train_iter=1)


@pytest.mark.parametrize(
    "over, message",
    [
        (
            dict(policy=dict(learn=dict(batch_size="32"))),
            r"'policy\.learn\.batch_size' expects int \(default 64\), got str '32'",
        ),
        (
            dict(policy=dict(learn=dict(batch_size=8.5))),
            r"'policy\.learn\.batch_size' expects int.*got float 8\.5",
        ),
        (
            dict(policy=dict(learn=dict(learning_rate="fast"))),
            r"'policy\.learn\.learning_rate' expects float.*got str",
        ),
        (dict(policy=dict(priority="yes")), r"'policy\.priority' expects bool.*got str 'yes'"),
        (dict(policy=dict(learn=16)), r"'policy\.learn' is a section \(dict\), got int 16"),
        (
            dict(policy=dict(other=dict(replay_buffer=[1]))),
            r"'policy\.other\.replay_buffer' is a section \(dict\), got list",
        ),
    ],
)
def test_wrong_types_name_the_key_the_expected_and_the_given_type(over, message):
    with pytest.raises(ConfigError, match=message):
        compile_with(**over)


@pytest.mark.parametrize("value", [0, -1])
@pytest.mark.parametrize(
    "path",
    [
        "policy.learn.batch_size",
        "policy.learn.update_per_collect",
        "policy.collect.n_sample",
        "policy.other.replay_buffer.replay_buffer_size",
        "policy.eval.evaluator.eval_freq",
        "policy.nstep",
        "env.collector_env_num",
        "env.evaluator_env_num",
        "env.n_evaluator_episode",
    ],
)
def test_sizes_below_one_are_refused(path, value):
    *sections, key = path.split(".")
    over = {key: value}
    for section in reversed(sections):
        over = {section: over}
    with pytest.raises(ConfigError) as err:
        compile_with(**over)
    assert str(err.value) == f"Config key '{path}' must be >= 1, got {value}; set it to 1 or more."


def test_a_negative_random_collect_size_is_refused():
    with pytest.raises(ConfigError, match=r"'policy\.random_collect_size' must be >= 0, got -5"):
        compile_with(policy=dict(random_collect_size=-5))


@pytest.mark.parametrize("buffer_type", ["advanced", "naive", "deque"])
def test_a_batch_larger_than_the_replay_buffer_says_what_to_change(buffer_type):
    create = dict(CREATE, replay_buffer=dict(type=buffer_type))
    over = dict(policy=dict(learn=dict(batch_size=64), other=dict(replay_buffer=dict(replay_buffer_size=50))))
    with pytest.raises(ConfigError) as err:
        compile_with(create=create, **over)
    assert str(err.value) == (
        "policy.learn.batch_size=64 is larger than policy.other.replay_buffer.replay_buffer_size=50: the "
        "buffer can never hold one batch, so the learner would never train. Set replay_buffer_size >= 64 "
        "or batch_size <= 50."
    )
    over["policy"]["other"]["replay_buffer"]["replay_buffer_size"] = 64  # equal is enough
    assert compile_with(create=create, **over).policy.learn.batch_size == 64


def test_unknown_env_id_suggests_close_ids(tmp_path):
    os.chdir(tmp_path)
    main = small_main("env_id", env=dict(env_id="CartPole-v2"))
    with pytest.raises(
        EnvError, match=r"Unknown gymnasium env id 'CartPole-v2'\. Close registered ids: \[.*'CartPole-v1'"
    ):
        serial_pipeline((main, CREATE), max_train_iter=1)
    main = small_main("env_id", env=dict(env_id="BadInputStpe-v0"))
    with pytest.raises(EnvError, match=r"'BadInputStep-v0'"):
        serial_pipeline((main, CREATE), max_train_iter=1)
    main = small_main("env_id", env=dict(env_id=None))
    with pytest.raises(EnvError, match=r"env\.env_id is not set; give a gymnasium id such as 'CartPole-v1'"):
        serial_pipeline((main, CREATE), max_train_iter=1)


@pytest.mark.parametrize(
    "section, name, message",
    [
        ("policy", "dqm", r"Unknown policy type 'dqm'\. Did you mean 'dqn'"),
        ("policy", "DQN", r"Unknown policy type 'DQN'\. Did you mean 'dqn'[,?]"),
        ("env_manager", "Subprocess", r"Unknown env_manager type 'Subprocess'\. Did you mean 'subprocess'"),
        ("env", "gymnasum", r"Unknown env type 'gymnasum'\. Did you mean 'gymnasium'"),
        ("env_manager", "subproces", r"Unknown env_manager type 'subproces'\. Did you mean 'subprocess'"),
        ("replay_buffer", "advancd", r"Unknown buffer type 'advancd'\. Did you mean 'advanced'"),
    ],
)
def test_unknown_component_types_suggest_the_registered_name(section, name, message):
    with pytest.raises(RegistryError, match=message):
        compile_with(create=dict(CREATE, **{section: dict(type=name)}))


def test_unknown_create_config_section_lists_the_known_ones():
    with pytest.raises(
        ConfigError, match=r"Unknown create_config section\(s\) \['colector'\]; expected \[.*'collector'"
    ):
        compile_with(create=dict(CREATE, colector=dict(type="sample")))


def refused(tmp_path, **over) -> str:
    """The message of the ConfigError compiling ``over`` raises; nothing was written under tmp_path."""
    main = small_main(str(tmp_path / "exp"), **over)
    with pytest.raises(ConfigError) as err:
        compile_config(main, seed=0, auto=True, create_cfg=CREATE, save_cfg=True)
    assert os.listdir(tmp_path) == []
    return str(err.value)


@pytest.mark.parametrize(
    "path, default",
    [
        ("policy.learn.batch_size", "64"),
        ("policy.learn.learning_rate", "0.001"),
        ("policy.discount_factor", "0.97"),
        ("env.collector_env_num", "8"),
        ("policy.other.replay_buffer.replay_buffer_size", "4096"),
    ],
)
def test_none_for_a_value_with_a_default_is_refused(tmp_path, path, default):
    *sections, key = path.split(".")
    over = {key: None}
    for section in reversed(sections):
        over = {section: over}
    message = refused(tmp_path, **over)
    assert message.startswith(f"Config key '{path}' cannot be None (default {default}): remove the key")


@pytest.mark.parametrize("section", ["policy.learn", "checkpoint", "policy.other.replay_buffer"])
@pytest.mark.parametrize("value", [None, 5])
def test_a_section_given_a_value_is_refused(tmp_path, section, value):
    *parents, key = section.split(".")
    over = {key: value}
    for parent in reversed(parents):
        over = {parent: over}
    message = refused(tmp_path, **over)
    assert message == (
        f"Config key '{section}' is a section (dict), got {type(value).__name__} {value!r}: give a dict of "
        "its keys, or remove it to use its defaults."
    )


@pytest.mark.parametrize(
    "over, message",
    [
        (dict(policy=dict(discount_factor=1.5)), "'policy.discount_factor' must be in [0, 1], got 1.5."),
        (dict(policy=dict(discount_factor=-0.5)), "'policy.discount_factor' must be in [0, 1], got -0.5."),
        (dict(env=dict(stop_value=float("nan"))), "'env.stop_value' must be a number, got NaN."),
        (dict(env=dict(stop_value="abc")), "'env.stop_value' must be a number, got str 'abc'."),
        (
            dict(policy=dict(learn=dict(learning_rate=-1e-3))),
            "'policy.learn.learning_rate' must be > 0, got -0.001.",
        ),
        (
            dict(policy=dict(learn=dict(learning_rate=0))),
            "'policy.learn.learning_rate' must be > 0, got 0.0.",
        ),
        (
            dict(env=dict(collector_env_num=1e6)),
            "'env.collector_env_num' must be in [1, 1024], got 1000000 (one",
        ),
        (
            dict(policy=dict(other=dict(replay_buffer=dict(replay_buffer_size=1e12)))),
            "'policy.other.replay_buffer.replay_buffer_size' must be in [1, 1e+08], got 1000000000000 (the",
        ),
        (
            dict(policy=dict(collect=dict(n_sample=1e12))),
            "'policy.collect.n_sample' must be in [1, 1e+07], got",
        ),
    ],
)
def test_values_out_of_range_are_refused_by_key_path(tmp_path, over, message):
    assert refused(tmp_path, **over).startswith(f"Config key {message}")


def test_an_infinite_stop_value_means_never_stop_and_is_accepted():
    assert compile_with(env=dict(stop_value=float("inf"))).env.stop_value == float("inf")


@pytest.mark.parametrize("seed", [-1, 2**32])
def test_a_seed_numpy_cannot_take_is_refused(tmp_path, seed):
    main = small_main(str(tmp_path / "exp"))
    with pytest.raises(
        ConfigError, match=rf"^Config key 'seed' must be in \[0, 4\.29497e\+09\], got {seed}\.$"
    ):
        compile_config(main, seed=seed, auto=True, create_cfg=CREATE, save_cfg=True)
    assert os.listdir(tmp_path) == []


def test_an_empty_or_overlong_exp_name_is_refused_before_any_folder(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    with pytest.raises(ConfigError, match=r"^Config key 'exp_name' is empty: name the run's output folder"):
        compile_config(small_main(""), seed=0, auto=True, create_cfg=CREATE, save_cfg=True)
    with pytest.raises(
        ConfigError, match=r"'exp_name' has a folder name of 300 bytes .*keep each name to 230"
    ):
        compile_config(small_main("runs/" + "x" * 300), seed=0, auto=True, create_cfg=CREATE, save_cfg=True)
    assert os.listdir(tmp_path) == []


def gib(nbytes: float) -> str:
    return f"{nbytes / 2**30:.1f}"


@pytest.mark.parametrize("buffer_cls", [NaiveReplayBuffer, AdvancedReplayBuffer])
def test_a_replay_buffer_too_large_for_memory_names_the_key(buffer_cls):
    """Within the range (1e8 rows), but rows of two channel-last Atari stacks (not stored as frames):
    5.1 TiB, refused at the first push before anything is allocated."""
    buf = buffer_cls(EasyDict(replay_buffer_size=10**8))
    frame = dict(obs=np.zeros((84, 84, 4), np.uint8), action=0, reward=0.0, done=False)
    with pytest.raises(ConfigError) as err:
        buf.push([dict(frame, next_obs=frame["obs"])], 0)
    memory, row = system_memory(), 2 * 84 * 84 * 4 + 8 + 4 + 1  # obs, next_obs, action, reward, done
    assert str(err.value) == (
        f"A replay buffer of 100000000 rows of this data needs 5258.3 GiB, more than this machine's "
        f"{gib(memory)} GiB: lower policy.other.replay_buffer.replay_buffer_size to at most about "
        f"{memory // row}."
    )
    assert buf.count() == 0


def test_a_replay_buffer_of_frames_is_sized_with_each_frame_once():
    """Channel-first stacks are stored as frames: per row 4 int32 frame ids per field and the
    action (int64), reward (float32) and done (bool); one 84x84 frame (plus three 8-byte words)
    per slot of 1e8 + 1e8 / 16 + 64."""
    buf = AdvancedReplayBuffer(EasyDict(replay_buffer_size=10**8))
    stack = np.zeros((4, 84, 84), np.uint8)
    with pytest.raises(ConfigError) as err:
        buf.push([dict(obs=stack, next_obs=stack, action=0, reward=0.0, done=False)], 0)
    need = 10**8 * (2 * 4 * 4 + 8 + 4 + 1) + (10**8 + 10**8 // 16 + 64) * (84 * 84 + 24)
    assert str(err.value).startswith(
        f"A replay buffer of 100000000 rows of this data needs {gib(need)} GiB, more than this machine's"
    )
    assert buf.count() == 0


IMPALA = dict(CREATE, policy=dict(type="impala"))


@pytest.mark.parametrize(
    "key, value, message",
    [
        ("rho_clip_ratio", -1.0, "must be > 0, got -1.0. It clips the importance weights of the value"),
        ("rho_clip_ratio", 0.0, "must be > 0, got 0.0. It clips the importance weights of the value"),
        ("rho_pg_clip_ratio", -0.5, "must be > 0, got -0.5. It clips the importance weights of the policy"),
        ("c_clip_ratio", -1.0, "must be >= 0, got -1.0; set it to 0 or more. It clips the trace"),
        ("lambda_", -2.0, "must be in [0, 1], got -2.0. 1 is the paper's V-trace"),
        ("lambda_", 1.5, "must be in [0, 1], got 1.5. 1 is the paper's V-trace"),
    ],
)
def test_vtrace_values_out_of_range_are_refused(tmp_path, key, value, message):
    main = small_main(str(tmp_path / "exp"), policy=dict(learn={key: value}))
    with pytest.raises(ConfigError) as err:
        compile_config(main, seed=0, auto=True, create_cfg=IMPALA, save_cfg=True)
    assert str(err.value).startswith(f"Config key 'policy.learn.{key}' {message}")
    assert os.listdir(tmp_path) == []


def test_vtrace_bounds_are_accepted():
    """c_clip_ratio 0 cuts the traces (one-step targets) and lambda_ 0 or 1 are V-trace's ends."""
    for learn in (dict(c_clip_ratio=0.0), dict(lambda_=0.0), dict(lambda_=1.0, rho_clip_ratio=1e-3)):
        cfg = compile_with(create=IMPALA, policy=dict(learn=learn))
        assert all(cfg.policy.learn[k] == v for k, v in learn.items())


@pytest.mark.parametrize("buffer_type", ["advanced", "deque"])
@pytest.mark.parametrize("value", [0, -1])
def test_a_max_use_below_one_is_refused(buffer_type, value):
    """max_use is the times an item may be sampled before it is removed: below 1 none could be."""
    with pytest.raises(ConfigError) as err:
        compile_with(
            create=dict(CREATE, replay_buffer=dict(type=buffer_type)),
            policy=dict(other=dict(replay_buffer=dict(max_use=value))),
        )
    assert str(err.value) == (
        f"Config key 'policy.other.replay_buffer.max_use' must be >= 1, got {float(value)}; set it to 1 or "
        "more. An item is removed once sampled this many times; inf (the default) never removes one."
    )


@pytest.mark.parametrize("key", ["sample_prefetch", "train_iters_per_call"])
def test_ray_call_counts_below_one_are_refused_by_key(tmp_path, key):
    from ding_ray.distributed import RayConfig

    main = small_main(str(tmp_path / "exp"), ray={key: 0})
    with pytest.raises(ConfigError) as err:
        compile_config(main, seed=0, create_cfg=CREATE, extra_defaults={"ray": RayConfig.default_config()})
    assert str(err.value).startswith(f"Config key 'ray.{key}' must be >= 1, got 0; set it to 1 or more. It ")
    assert os.listdir(tmp_path) == []


def test_a_replay_buffer_of_frames_too_large_for_memory_is_refused_at_compile_time(tmp_path):
    """Known from obs_shape before anything runs: per row 4 frame ids of obs and next_obs, and one
    84x84 frame (plus three 8-byte words) per slot of 1e8 + 1e8 / 16 + 64: a bound below the size
    the first push would find (action, reward and done come on top)."""
    message = refused(
        tmp_path,
        policy=dict(
            model=dict(obs_shape=[4, 84, 84]), other=dict(replay_buffer=dict(replay_buffer_size=10**8))
        ),
    )
    need = 10**8 * 2 * 4 * 4 + (10**8 + 10**8 // 16 + 64) * (84 * 84 + 24)
    memory = system_memory()
    assert message == (
        f"A replay buffer of 100000000 rows of obs and next_obs [4, 84, 84] alone (1 byte a value, each "
        f"frame once) needs {gib(need)} GiB, more than this machine's {gib(memory)} GiB: lower "
        f"policy.other.replay_buffer.replay_buffer_size to at most about {10**8 * memory // need}."
    )


def test_an_impala_unroll_len_whose_vtrace_cannot_fit_is_refused_at_compile_time(tmp_path):
    """V-trace over unrolls of T steps holds four [T, T, batch_size] float32 tensors and a [T, T]
    mask: 1,202 GiB for T = 100000 and batch_size 8."""
    main = small_main(str(tmp_path / "exp"), policy=dict(unroll_len=100_000))
    with pytest.raises(ConfigError) as err:
        compile_config(main, seed=0, auto=True, create_cfg=IMPALA, save_cfg=True)
    memory = system_memory()
    longest = math.isqrt(memory // (4 * 8 * 4 + 1))
    assert str(err.value) == (
        "Config key 'policy.unroll_len' is 100000: V-trace over unrolls of that many steps holds "
        f"[unroll_len, unroll_len, batch_size] matrices, {gib(100_000**2 * (4 * 8 * 4 + 1))} GiB with "
        f"policy.learn.batch_size=8, more than this machine's {gib(memory)} GiB; at most {longest} fits. "
        "Set an unroll_len of tens of steps (DI-engine's default is 32; the IMPALA paper's 20 to 100): an "
        "unroll longer than an episode is mostly padding."
    )
    assert os.listdir(tmp_path) == []


def test_an_impala_replay_of_unrolls_too_large_for_memory_is_refused_at_compile_time(tmp_path):
    """Unrolls short enough for V-trace, but 1e5 rows of 2000 steps of 84x84 frames, each frame
    once: the frames of 2e8 stacks and their ids, far beyond this machine's memory."""
    main = small_main(
        str(tmp_path / "exp"),
        policy=dict(
            unroll_len=2000,
            model=dict(obs_shape=[4, 84, 84]),
            other=dict(replay_buffer=dict(replay_buffer_size=10**5)),
        ),
    )
    with pytest.raises(ConfigError) as err:
        compile_config(main, seed=0, auto=True, create_cfg=IMPALA, save_cfg=True)
    assert str(err.value).startswith(
        "A replay buffer of 100000 rows of 2000-step unrolls of obs and next_obs [4, 84, 84] alone (1 byte "
        "a value, each frame once) needs "
    )
    assert "GiB, more than this machine's" in str(err.value)
    assert os.listdir(tmp_path) == []


@pytest.mark.parametrize("name", ["cartpole_ppo", "cartpole_impala"])
def test_a_sample_collector_without_n_sample_is_refused_at_compile_time(tmp_path, name):
    """PPO and IMPALA have no default n_sample: the run would fail at its first collect."""
    bundled = load_config(name)
    bundled.main_config.exp_name = str(tmp_path / "exp")
    bundled.main_config.policy.collect.pop("n_sample", None)
    with pytest.raises(ConfigError) as err:
        compile_config(bundled.main_config, seed=0, auto=True, create_cfg=bundled.create_config)
    assert str(err.value).startswith("Config key 'policy.collect.n_sample' is not set")
    assert os.listdir(tmp_path) == []
