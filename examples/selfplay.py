"""Self-play DQN on tic-tac-toe: the learner plays frozen copies of itself and ends up beating a
uniformly random player.

Run:
    python examples/selfplay.py --seed 0             # one process
    python examples/selfplay.py --seed 0 --ray 2     # 2 battle collector actors, one buffer actor
    ray submit cluster.yaml examples/selfplay.py --ray 8

The learner is player 0 of ``TicTacToeEnv`` (who moves first alternates game by game), a frozen
copy drawn from an opponent pool is player 1; every ``refresh_freq`` training iterations the
current weights join the pool (the last ``pool_size`` are kept). Both players' samples train the
one Q-network (DQN with the legal-action mask). Every ``eval_freq`` iterations the battle
evaluator plays ``n_evaluator_episode`` games against a random player; at ``target_win_rate`` the
run stops, and a last, independent evaluation (other seeds) gives the reported win rate.
"""

import argparse
import copy
import json

from ding_ray.config import compile_config
from ding_ray.data import create_buffer
from ding_ray.entry.cli_commands import exit_on_interrupt
from ding_ray.utils.runtime import set_torch_threads, setup_logging
from ding_ray.worker.selfplay import BattleRolloutWorker, SelfPlayLearner

# ----- config -----
main_config = dict(
    exp_name="selfplay_tictactoe",
    env=dict(collector_env_num=8, evaluator_env_num=8, n_evaluator_episode=200, first_player="alternate"),
    policy=dict(
        cuda=False,
        model=dict(obs_shape=19, action_shape=10, encoder_hidden_size_list=[128, 128], dueling=True),
        nstep=2,  # a player's next decision is two env steps ahead (the opponent's move between)
        discount_factor=0.95,
        learn=dict(batch_size=128, learning_rate=1e-3, target_update_freq=200, huber_kappa=1.0),
        collect=dict(n_sample=64),  # per player: 128 samples per collect
        eval=dict(evaluator=dict(eval_freq=500)),
        other=dict(
            eps=dict(type="linear", start=1.0, end=0.1, decay=20_000),
            replay_buffer=dict(replay_buffer_size=50_000),
        ),
    ),
)
create_config = dict(
    env=dict(type="tictactoe"),
    env_manager=dict(type="base"),
    policy=dict(type="dqn"),
    collector=dict(type="sample_1v1"),
    evaluator=dict(type="battle_interaction"),
    replay_buffer=dict(type="naive"),
)
selfplay_config = dict(
    update_per_collect=32,  # gradient steps per collect call (128 new samples)
    refresh_freq=500,  # training iterations between two copies into the opponent pool
    pool_size=5,
    target_win_rate=0.9,  # stop once an evaluation against the random player wins this often
)


def make_config(seed: int = 0, **over) -> dict:
    """The compiled config of ``seed``; ``over`` overrides ``env`` keys (tests play fewer games)."""
    config = copy.deepcopy(main_config)
    config["env"].update(over)
    config["exp_name"] = f"selfplay_tictactoe_seed{seed}"
    return compile_config(config, seed=seed, auto=True, create_cfg=create_config, save_cfg=False)


def main(seed: int = 0, max_env_step: int = 200_000, **over) -> dict:
    """Train until the target win rate or ``max_env_step``; returns the figures of the run."""
    set_torch_threads(1)
    cfg = make_config(seed, **over)
    sp = selfplay_config

    # ----- components -----
    learner = SelfPlayLearner(cfg, sp["refresh_freq"], sp["pool_size"], sp["target_win_rate"])
    worker = BattleRolloutWorker(cfg, index=0)
    buffer_ = create_buffer(cfg.policy.other.replay_buffer)
    batch_size = cfg.policy.learn.batch_size

    # ----- loop: evaluate when due, collect against a pool opponent, train -----
    while not learner.should_stop(worker.envstep, max_env_step):
        worker.load_weights(learner.train_iter, learner.weights())
        worker.set_opponent(*learner.pool.sample())
        eps = learner.eps(worker.envstep)
        batch, _ = worker.rollout(train_iter=learner.train_iter, policy_kwargs={"eps": eps})
        buffer_.push(batch, worker.envstep)
        for _ in range(sp["update_per_collect"]):
            learner.train(buffer_.sample(batch_size, learner.train_iter, columnar=True))

    # ----- report: 200 new games against the random player -----
    result = learner.final_report(worker.envstep)
    worker.close()
    learner.close()
    return result


if __name__ == "__main__":
    with exit_on_interrupt():  # Ctrl-C/SIGTERM: one line and exit status 130, as ding-ray
        parser = argparse.ArgumentParser(
            description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
        )
        parser.add_argument("--seed", type=int, default=0)
        parser.add_argument("--max-env-step", type=int, default=200_000)
        parser.add_argument(
            "--ray", type=int, default=0, help="battle collector actors (0: one process, no Ray)"
        )
        args = parser.parse_args()
        setup_logging()
        if args.ray:
            from ding_ray.distributed.battle import selfplay_on_ray

            out = selfplay_on_ray(make_config(args.seed), selfplay_config, args.ray, args.max_env_step)
        else:
            out = main(args.seed, args.max_env_step)
        print(json.dumps(out))
