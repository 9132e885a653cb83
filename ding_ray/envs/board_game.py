"""``TicTacToeEnv``: a two-player zero-sum board game for self-play, with legal-action masks.

Both players act at every env step (the battle collectors' contract, as DI-engine's 1v1 envs):
``step([action_0, action_1])``. Only the player to move places a mark; the other one must play
``PASS`` (the last action), the only legal action of a player who is not to move. This keeps the
game an ordinary MDP from either player's side, so any value-based or policy-gradient method
that respects the mask learns it without knowing whose turn it is.

Per player ``i`` (lists of two, indexed by player):

- obs ``{'observation': float32[19], 'action_mask': int8[10]}``: the player's own marks (9), the
  opponent's marks (9), and 1.0 when it is this player's turn; the mask has 1 for legal actions.
- reward: +1 to the winner and -1 to the loser at the last step, 0 otherwise (zero-sum).
- info: ``truncated`` (always False: every game ends on the board), and at the end
  ``eval_episode_return``, ``result`` ('win' / 'loss' / 'draw'), ``win`` / ``draw`` / ``loss`` as 0.0 or
  1.0 (their means over episodes are the rates) and ``first`` (1.0 if the player moved first).
"""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np
from easydict import EasyDict

from ding_ray.config.merge import checked_config, default_config_of
from ding_ray.envs.gymnasium_env import BaseEnvTimestep
from ding_ray.errors import ConfigError, EnvError
from ding_ray.utils.registry import ENV_REGISTRY

N_CELLS = 9
PASS = N_CELLS  # the action of the player who is not to move
N_ACTIONS = N_CELLS + 1
OBS_DIM = 2 * N_CELLS + 1
_LINES = np.array([[0, 1, 2], [3, 4, 5], [6, 7, 8], [0, 3, 6], [1, 4, 7], [2, 5, 8], [0, 4, 8], [2, 4, 6]])


@ENV_REGISTRY.register("tictactoe")
class TicTacToeEnv:
    """Tic-tac-toe on a 3x3 board for two players (0 and 1), in DI-engine's env interface."""

    config = dict(
        type="tictactoe",
        collector_env_num=8,  # envs stepped together by each collector
        evaluator_env_num=5,  # envs stepped together by the evaluator
        n_evaluator_episode=200,  # games per evaluation
        stop_value=None,  # mean return of player 0 that ends training; None: never stop early
        # who moves first: 'alternate' (player 0 in this env's even-numbered games, player 1 in the
        # odd ones, so an even number of games per env is balanced), 'random', 'player0' or 'player1'
        first_player="alternate",
    )

    @classmethod
    def default_config(cls) -> EasyDict:
        return default_config_of(cls)

    def __init__(self, cfg: dict | None = None) -> None:
        cfg = checked_config(type(self), {k: v for k, v in (cfg or {}).items() if k != "manager"}, "env")
        if cfg.first_player not in ("alternate", "random", "player0", "player1"):
            raise ConfigError(
                "env.first_player must be 'alternate', 'random', 'player0' or 'player1', "
                f"got {cfg.first_player!r}."
            )
        self._cfg = cfg
        player_space = gym.spaces.Dict(
            observation=gym.spaces.Box(0.0, 1.0, shape=(OBS_DIM,), dtype=np.float32),
            action_mask=gym.spaces.Box(0, 1, shape=(N_ACTIONS,), dtype=np.int8),
        )
        self.observation_space = gym.spaces.Tuple((player_space, player_space))
        self.action_space = gym.spaces.Tuple((gym.spaces.Discrete(N_ACTIONS), gym.spaces.Discrete(N_ACTIONS)))
        self._seed: int | None = None
        self._dynamic_seed = True
        self._rng = np.random.default_rng()
        self._games = 0
        self._board = np.zeros(N_CELLS, dtype=np.int8)  # 0 empty, 1 player 0's mark, -1 player 1's
        self._to_move = 0
        self._first = 0
        self._done = True

    # ----- DI-engine env interface ----------------------------------------------------------------
    def seed(self, seed: int, dynamic_seed: bool = True) -> None:
        """Seeds who moves first (``first_player='random'``) and ``random_action``, and restarts the
        count of games that ``'alternate'`` follows. Without ``dynamic_seed`` every ``reset`` starts
        the generator over from ``seed`` (the evaluator's fixed games)."""
        self._seed, self._dynamic_seed = int(seed), dynamic_seed
        self._rng = np.random.default_rng(self._seed)
        self._games = 0

    def reset(self) -> list[dict[str, np.ndarray]]:
        if self._seed is not None and not self._dynamic_seed:
            self._rng = np.random.default_rng(self._seed)  # 'alternate' still alternates: see seed()
        first = self._cfg.first_player
        if first == "alternate":
            first = self._games % 2
        elif first == "random":
            first = int(self._rng.integers(2))
        else:
            first = int(first[-1])
        self._games += 1
        self._board[:] = 0
        self._to_move = self._first = int(first)
        self._done = False
        return self._observe()

    def step(self, action: Any) -> BaseEnvTimestep:
        if self._done:
            raise EnvError("TicTacToeEnv.step after the game ended: call reset() first.")
        actions = self._check_actions(action)
        mover = self._to_move
        self._board[actions[mover]] = 1 if mover == 0 else -1
        winner = _winner(self._board)
        self._done = winner is not None or not (self._board == 0).any()
        self._to_move = 1 - mover
        reward = np.zeros(2, dtype=np.float32)
        info: list[dict[str, Any]] = [{"truncated": False}, {"truncated": False}]
        if self._done:
            if winner is not None:
                reward[winner], reward[1 - winner] = 1.0, -1.0
            for player in (0, 1):
                result = "draw" if winner is None else ("win" if winner == player else "loss")
                info[player].update(
                    eval_episode_return=float(reward[player]),
                    result=result,
                    win=float(result == "win"),
                    draw=float(result == "draw"),
                    loss=float(result == "loss"),
                    first=float(self._first == player),
                )
        return BaseEnvTimestep(self._observe(), reward, self._done, info)

    def random_action(self) -> list[int]:
        """A uniformly drawn legal action for each player (``PASS`` for the one not to move)."""
        return [int(self._rng.choice(self.legal_actions(player))) for player in (0, 1)]

    def enable_save_replay(self, replay_path: str) -> None:
        raise EnvError(
            "TicTacToeEnv cannot save replays (it has no renderer); set "
            "policy.eval.evaluator.render.render_freq=-1. str(env) prints the board."
        )

    def disable_save_replay(self) -> None:
        pass

    def close(self) -> None:
        pass

    # ----- game ----------------------------------------------------------------------------------
    def legal_actions(self, player: int) -> np.ndarray:
        """The action ids ``player`` may play now."""
        return np.flatnonzero(self._mask(player))

    def _mask(self, player: int) -> np.ndarray:
        mask = np.zeros(N_ACTIONS, dtype=np.int8)
        if player == self._to_move and not self._done:
            mask[:N_CELLS] = self._board == 0
        else:
            mask[PASS] = 1
        return mask

    def _observe(self) -> list[dict[str, np.ndarray]]:
        out = []
        for player in (0, 1):
            own = 1 if player == 0 else -1
            observation = np.zeros(OBS_DIM, dtype=np.float32)
            observation[:N_CELLS] = self._board == own
            observation[N_CELLS : 2 * N_CELLS] = self._board == -own
            observation[-1] = float(player == self._to_move and not self._done)
            out.append({"observation": observation, "action_mask": self._mask(player)})
        return out

    def _check_actions(self, action: Any) -> list[int]:
        try:
            actions = [int(a) for a in np.asarray(action).reshape(-1)]
        except (TypeError, ValueError) as e:
            raise EnvError(f"TicTacToeEnv.step takes [action_0, action_1], got {action!r}.") from e
        if len(actions) != 2:
            raise EnvError(f"TicTacToeEnv.step takes one action per player ([a0, a1]), got {action!r}.")
        for player, a in enumerate(actions):
            if not 0 <= a < N_ACTIONS or not self._mask(player)[a]:
                legal = self.legal_actions(player).tolist()
                raise EnvError(
                    f"Player {player} played illegal action {a}; legal now: {legal} (the obs's action_mask). "
                    f"Mask the policy's choice, e.g. argmax over legal actions only."
                )
        return actions

    def __repr__(self) -> str:
        marks = {0: ".", 1: "X", -1: "O"}
        rows = ["".join(marks[int(v)] for v in self._board[r * 3 : r * 3 + 3]) for r in range(3)]
        return "\n".join(rows)


def _winner(board: np.ndarray) -> int | None:
    sums = board[_LINES].sum(axis=1)
    if (sums == 3).any():
        return 0
    if (sums == -3).any():
        return 1
    return None
