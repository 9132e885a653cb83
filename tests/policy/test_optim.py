import subprocess
import sys

import torch

from ding_ray.policy.optim import make_adam


def _net(seed):
    torch.manual_seed(seed)
    return torch.nn.Sequential(torch.nn.Linear(4, 32), torch.nn.ReLU(), torch.nn.Linear(32, 2))


def test_make_adam_updates_exactly_like_torch_adam():
    ours, ref = _net(0), _net(0)
    opt = make_adam(ours.parameters(), lr=1e-2, weight_decay=1e-4)
    ref_opt = torch.optim.Adam(ref.parameters(), lr=1e-2, weight_decay=1e-4, fused=True)
    torch.manual_seed(1)
    for _ in range(20):
        x = torch.randn(16, 4)
        for net, o in ((ours, opt), (ref, ref_opt)):
            o.zero_grad()
            net(x).pow(2).mean().backward()
            o.step()
    for a, b in zip(ours.parameters(), ref.parameters(), strict=True):
        assert torch.equal(a, b)
    # The checkpoint format is torch's: a torch Adam loads our state and vice versa.
    ref_opt.load_state_dict(opt.state_dict())
    opt.load_state_dict(ref_opt.state_dict())
    assert opt.state_dict()["state"][0]["step"].item() == 20


def test_training_does_not_import_the_compiler():
    code = (
        "import sys, torch\n"
        "from ding_ray.policy.optim import make_adam\n"
        "net = torch.nn.Linear(4, 2)\n"
        "opt = make_adam(net.parameters(), 1e-3)\n"
        "opt.zero_grad(); net(torch.randn(8, 4)).sum().backward(); opt.step()\n"
        "opt.load_state_dict(opt.state_dict())\n"
        "print('torch._dynamo' in sys.modules)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"
