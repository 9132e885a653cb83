"""Weights through the object store: the learner's publisher decides what is published, the worker
that loads them what is loaded (``pull``); whatever is between passes references on."""

import numpy as np
import ray

from ding_ray.distributed.weights import WeightsPublisher, WeightsRef, pull
from ding_ray.worker.learn_worker import LearnWorker
from ding_ray.worker.rollout_worker import RolloutWorker
from tests.distributed.configs import compiled


def test_the_publisher_puts_the_first_weights_then_every_n_iterations_each_once(ray_session):
    publisher = WeightsPublisher(every=3)
    weights = {"w": np.zeros(2, dtype=np.float32)}
    published = [publisher.publish(i, weights).version for i in range(10) if publisher.due(i)]
    assert published == [0, 3, 6, 9] and publisher.published == 4
    latest = publisher.latest
    assert publisher.publish(9, weights) is latest  # a version out already is not put again
    assert publisher.publish(7, weights) is latest and publisher.published == 4  # nor an older one
    assert publisher.publish(10, weights).version == 10  # asked for, not due: out at once (sync rounds)


def test_a_worker_loads_only_newer_weights_and_those_of_a_restarted_learner(ray_session, tmp_path):
    worker, learner = RolloutWorker(compiled(tmp_path)), LearnWorker(compiled(tmp_path))
    weights = ray.put(learner.weights()[1])
    assert not pull(worker, None) and worker.version == -1  # nothing published yet
    assert pull(worker, WeightsRef(8, weights, incarnation=1)) and worker.version == 8
    assert not pull(worker, WeightsRef(8, weights, incarnation=1))  # held already: not fetched again
    assert not pull(worker, WeightsRef(5, weights, incarnation=1)) and worker.version == 8  # never older
    # the learner restarted from its checkpoint of iteration 2: its weights replace the dead one's
    assert pull(worker, WeightsRef(2, weights, incarnation=2)) and worker.version == 2
    assert not pull(worker, WeightsRef(9, weights, incarnation=1)) and worker.version == 2
    worker.close()
