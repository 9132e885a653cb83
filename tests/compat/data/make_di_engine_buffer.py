"""Record what DI-engine 0.5.3's new buffer API (``ding.data.buffer``) does in a few seeded scenarios,
for ding_ray's compat test.

Run with a Python that has DI-engine 0.5.3 installed (not ding_ray's environment)::

    python tests/compat/data/make_di_engine_buffer.py     # writes di_engine_buffer.json

``scenarios(api)`` takes the buffer package (``ding.data.buffer`` here, ``ding_ray.data.buffer`` in the
test), seeds Python's and numpy's generators, and returns per scenario what the calls gave, as plain
data (each item as its ``x`` field). The scenarios avoid DI-engine's ``delete`` after a first
deletion: it rebuilds its id map from as many items as were deleted, so later look-ups miss.
"""

from __future__ import annotations

import json
import os
import random

import numpy as np


def xs(items: list) -> list:
    return [int(item.data["x"]) for item in items]


def items_of(buffer_) -> list:
    return [int(buffer_.get(i).data["x"]) for i in range(buffer_.count())]


def error_of(call) -> str | None:
    try:
        call()
    except Exception as err:  # noqa: BLE001 - the recorded fact is the exception's type
        return type(err).__name__
    return None


def filled(api, size: int, n: int, sliced: bool = False) -> object:
    buffer_ = api.DequeBuffer(size=size, sliced=sliced)
    for i in range(n):
        buffer_.push({"x": i}, meta={"env": i % 3})
    return buffer_


def scenarios(api, middleware) -> dict:
    out = {}
    random.seed(0)
    buffer_ = filled(api, 10, 15)
    out["uniform"] = dict(
        held=items_of(buffer_),
        sample=xs(buffer_.sample(4)),
        replace=xs(buffer_.sample(12, replace=True)),
        sample_range=xs(buffer_.sample(3, sample_range=slice(2, 8))),
        last=int(buffer_[-1].data["x"]),
        length=len(buffer_),
        too_many=error_of(lambda: buffer_.sample(11)),
        ignored=len(buffer_.sample(11, ignore_insufficient=True)),
        by_indices=xs(buffer_.sample(indices=[buffer_.get(3).index, buffer_.get(1).index])),
        meta=buffer_.get(0).meta,
    )
    random.seed(1)
    out["groupby"] = dict(
        groups=[xs(g) for g in buffer_.sample(2, groupby="env")],
        unrolled=[xs(g) for g in buffer_.sample(3, groupby="env", unroll_len=2)],
        replace=[xs(g) for g in buffer_.sample(5, groupby="env", replace=True)],
        too_many=error_of(lambda: buffer_.sample(4, groupby="env")),
        sliced=[xs(g) for g in filled(api, 20, 20, sliced=True).sample(3, groupby="env", unroll_len=3)],
    )
    index = buffer_.get(2).index
    out["update"] = dict(
        updated=buffer_.update(index, data={"x": 99}, meta={"env": 7}),
        missing=buffer_.update("no-such-index", data={"x": 1}),
        held=items_of(buffer_),
        meta=buffer_.get(2).meta,
    )
    buffer_.delete([buffer_.get(0).index, buffer_.get(4).index])
    deleted = dict(held=items_of(buffer_), count=buffer_.count())
    buffer_.push({"x": 50}, meta={"env": 0})
    deleted["after_push"] = items_of(buffer_)
    buffer_.clear()
    deleted["cleared"] = buffer_.count()
    out["delete"] = deleted

    np.random.seed(0)
    buffer_ = api.DequeBuffer(size=8)
    per = middleware.PriorityExperienceReplay(buffer_, IS_weight=True)
    buffer_.use(per)
    for i in range(6):
        buffer_.push({"x": i}, meta={"priority": float(i + 1)})
    buffer_.push({"x": 6})  # the largest priority so far: 6
    first = buffer_.sample(4)
    for item in first:
        item.meta["priority"] = 10.0 if int(item.data["x"]) == 0 else 0.5
        buffer_.update(item.index, None, item.meta)
    second = buffer_.sample(5)
    out["priority"] = dict(
        first=xs(first),
        first_is=[round(float(item.meta["priority_IS"]), 9) for item in first],
        second=xs(second),
        second_is=[round(float(item.meta["priority_IS"]), 9) for item in second],
        max_priority=round(per.max_priority, 9),
    )

    random.seed(2)
    buffer_ = filled(api, 10, 5)
    buffer_.use(middleware.use_time_check(buffer_, max_use=2))
    once = buffer_.sample(3)
    twice = buffer_.sample(3)
    out["use_time_check"] = dict(
        once=xs(once),
        twice=xs(twice),
        use_count=[item.meta["use_count"] for item in twice],
        held=items_of(buffer_),
    )

    buffer_ = api.DequeBuffer(size=10)
    buffer_.use(middleware.staleness_check(buffer_, max_staleness=5))
    for i in range(4):
        buffer_.push({"x": i}, meta={"train_iter_data_collected": 3 * i})
    random.seed(3)
    sampled = buffer_.sample(8, 2)
    out["staleness_check"] = dict(
        sampled=xs(sampled),
        staleness=[buffer_.get(i).meta["staleness"] for i in range(buffer_.count())],
        held=items_of(buffer_),
        no_meta=error_of(lambda: buffer_.push({"x": 9})),
    )

    buffer_ = api.DequeBuffer(size=10)
    buffer_.use(middleware.clone_object())
    pushed = {"x": 1}
    buffer_.push(pushed)
    pushed["x"] = 2
    sampled = buffer_.sample(1)
    sampled[0].data["x"] = 3
    out["clone_object"] = dict(held=items_of(buffer_))

    random.seed(4)
    buffer_ = filled(api, 20, 20)
    buffer_.use(middleware.group_sample(size_in_group=3))
    ordered = [xs(g) for g in buffer_.sample(2, groupby="env")]
    buffer_ = filled(api, 20, 20)
    buffer_.use(middleware.group_sample(size_in_group=2, ordered_in_group=False))
    unordered = [xs(g) for g in buffer_.sample(2, groupby="env")]
    out["group_sample"] = dict(ordered=ordered, unordered=unordered)

    random.seed(5)
    buffer_ = filled(api, 20, 7)
    buffer_.use(middleware.padding(policy="none"))
    groups = buffer_.sample(3, groupby="env")
    out["padding"] = dict(lengths=[len(g) for g in groups], empty=[g[-1].data is None for g in groups])

    random.seed(6)
    buffer_ = filled(api, 10, 10)
    buffer_.use(middleware.sample_range_view(buffer_, start=-4))
    out["sample_range_view"] = dict(sampled=sorted(xs(buffer_.sample(4))))
    return out


def main() -> None:
    import importlib

    api = importlib.import_module("ding.data.buffer")  # ``ding.data.buffer`` the attribute is a module inside
    middleware = importlib.import_module("ding.data.buffer.middleware")

    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "di_engine_buffer.json")
    with open(path, "w") as f:
        json.dump(scenarios(api, middleware), f, indent=1, sort_keys=True)
        f.write("\n")
    print("wrote", path)


if __name__ == "__main__":
    main()
