"""docs/config_reference.md is what the components' config dicts say now."""

import os

from ding_ray.config.reference import config_source, render
from ding_ray.policy.dqn import DQNPolicy

DOC = os.path.join(os.path.dirname(__file__), "..", "..", "docs", "config_reference.md")


def test_the_committed_reference_is_up_to_date():
    with open(DOC) as f:
        committed = f.read()
    assert committed == render(), (
        "regenerate it: python -m ding_ray.config.reference > docs/config_reference.md"
    )


def test_a_component_shows_its_defaults_with_their_comments():
    source = config_source(DQNPolicy)
    assert source.startswith("config = dict(") and "nstep=" in source and "#" in source
    text = render()
    for name in ("### `dqn`", "### `ppo`", "### `sac`", "### `advanced`", "## Ray (`ray`", "num_learners=1"):
        assert name in text
