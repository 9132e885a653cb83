"""A learner group trains as one learner: 2 members on halves of every minibatch end with the
weights one learner gets from the whole minibatches, step after step."""

from __future__ import annotations

import numpy as np
import pytest
import ray

from ding_ray.distributed import RayRun, make_plan
from ding_ray.distributed.learner_group import GroupLearnerActor
from ding_ray.framework import pipelines
from ding_ray.worker.learn_worker import LearnWorker
from ding_ray.worker.rollout_worker import RolloutWorker
from tests.distributed.configs import compiled

pytestmark = pytest.mark.ray


def test_two_members_end_with_the_weights_of_one_learner(ray_session, tmp_path):
    cfg = compiled(tmp_path, "group")
    cfg.policy.priority = cfg.policy.priority_IS_weight = False  # batches straight from a collector
    batch_size = int(cfg.policy.learn.batch_size)
    worker = RolloutWorker(cfg)
    batches = [worker.warm_up_rollout(10 * batch_size)[0] for _ in range(2)]  # 20 steps
    worker.close()

    single = LearnWorker(cfg)
    members = [ray.remote(GroupLearnerActor).remote(cfg, 1, rank, 2) for rank in range(2)]
    try:
        address = ray.get(members[0].address.remote())
        assert ray.get([m.join.remote(address) for m in members], timeout=120) == [0, 1]
        for batch in batches:
            single.train(batch)
            infos = ray.get([m.train.remote(batch) for m in members])
            assert [info["iters"] for info, _ in infos] == [10, 10]
        assert single.train_iter == 20
        expected = single.weights()[1]
        for version, weights in ray.get([m.weights.remote() for m in members]):
            assert version == 20
            for key, value in expected.items():
                np.testing.assert_allclose(weights[key], value, rtol=1e-4, atol=1e-6, err_msg=key)
        # and the training moved them: not equal by standing still
        start = LearnWorker(cfg).weights()[1]
        assert any(not np.allclose(start[k], expected[k]) for k in expected)
    finally:
        for m in members:
            ray.kill(m)


@pytest.mark.parametrize("pipeline", ["async", "sync"])
def test_the_pipelines_train_with_a_learner_group(ray_session, tmp_path, pipeline):
    cfg = compiled(tmp_path, f"group_{pipeline}", pipeline=pipeline, num_learners=2, n_sample=64)
    with RayRun(cfg, make_plan(cfg)) as rc, rc.task() as task:
        assert "learner-1" in dict(rc.actors.named())
        build = pipelines.off_policy if pipeline == "async" else pipelines.on_policy
        build(task, cfg, rc, max_train_iter=40)
        task.run()
        versions_and_weights = ray.get([m.weights.remote() for m in rc.actors.learners])
    assert task.ctx.train_iter >= 40 and rc.result["train_iter"] == task.ctx.train_iter
    (v0, w0), (v1, w1) = versions_and_weights
    assert v0 == v1 >= task.ctx.train_iter  # the members took every step together (queued ones too) ...
    for key in w0:  # ... and hold the same weights
        np.testing.assert_allclose(w0[key], w1[key], rtol=1e-5, atol=1e-7, err_msg=key)


def test_di_engine_multi_gpu_asks_for_the_group_size(tmp_path):
    from ding_ray.entry import compile_ray_config
    from ding_ray.errors import ConfigError
    from tests.distributed.configs import small_config

    main, create = small_config(str(tmp_path / "mg"))
    main["policy"]["multi_gpu"] = True
    with pytest.raises(ConfigError, match="set ray.num_learners"):
        compile_ray_config((main, create), save_cfg=False)
    main["ray"]["num_learners"] = 2
    cfg = compile_ray_config((main, create), save_cfg=False)
    assert cfg.ray.num_learners == 2 and not cfg.policy.multi_gpu  # the group does the averaging
