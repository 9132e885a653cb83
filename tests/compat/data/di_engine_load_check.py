"""Run by ``test_di_engine_loads_ding_ray.py`` with DI-engine 0.5.3's Python: load checkpoints that
``save_for_di_engine`` wrote into DI-engine's own policies and report what they compute.

    python di_engine_load_check.py SPEC.json     # prints one json object

``SPEC.json`` lists cases: a dizoo config (path inside ``dizoo/``), the converted checkpoint, and
observations (and actions, for a Q(s, a) critic). For each case the policy DI-engine builds from
the config loads the file in its learn mode and in its eval mode, as a user would
(``load_state_dict(torch.load(path))``); the output has the model's outputs on the observations,
and, per optimizer of the learn mode, Adam's first moment of each parameter under its name.
"""

from __future__ import annotations

import json
import sys

import torch


def main(spec_path: str) -> None:
    from ding.config import compile_config, read_config
    from ding.policy import create_policy

    spec = json.load(open(spec_path))
    out = {}
    for name, case in spec["cases"].items():
        main_cfg, create_cfg = read_config(case["config_file"])
        cfg = compile_config(main_cfg, create_cfg=create_cfg, auto=True, save_cfg=False)
        policy = create_policy(cfg.policy, enable_field=["learn", "eval"])
        state = torch.load(case["checkpoint"], map_location="cpu", weights_only=True)
        policy.learn_mode.load_state_dict(state)
        policy.eval_mode.load_state_dict(state)
        model = policy.eval_mode.get_attribute("model")
        obs = torch.tensor(case["obs"])
        with torch.no_grad():
            if "action" in case:  # ContinuousQAC
                mu, sigma = model(obs, mode="compute_actor")["logit"]
                q = model({"obs": obs, "action": torch.tensor(case["action"])}, mode="compute_critic")[
                    "q_value"
                ]
                outputs = {"mu": mu, "sigma": sigma, "q_value": torch.stack(q) if isinstance(q, list) else q}
            elif case["kind"] == "vac":
                both = model(obs, mode="compute_actor_critic")
                outputs = {"logit": both["logit"], "value": both["value"]}
            else:
                outputs = {"logit": model(obs)["logit"]}
        learn_model = policy.learn_mode.get_attribute("model")
        names = {id(p): n for n, p in learn_model.named_parameters()}
        moments = {}
        for key in [k for k in state if k.startswith("optimizer") and k != "optimizer_alpha"]:
            optimizer = policy.learn_mode.get_attribute(key)
            moments[key] = {
                names[id(p)]: optimizer.state[p]["exp_avg"].flatten().tolist()
                for group in optimizer.param_groups
                for p in group["params"]
                if p in optimizer.state
            }
        out[name] = {
            "outputs": {k: v.flatten().tolist() for k, v in outputs.items()},
            "moments": moments,
            "last_iter": state.get("last_iter"),
        }
    print(json.dumps(out))


if __name__ == "__main__":
    main(sys.argv[1])
