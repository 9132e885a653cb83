"""Ray's cluster launcher for real: ``cluster-local.yaml`` on hosts that run sshd (``Hosts(4, ssh=True)``:
host 0 is the user's machine, host 1 the head, hosts 2 and 3 the workers), driven by the lines of the
README's block for machines of one's own, run as written from host 0 (the yaml being a copy with the
hosts' addresses and user filled in); then nothing is left on this machine.

``ray down`` reaches only the addresses of that copy, the hosts' own, and its ``ray stop`` runs through
each host's sshd, inside that host's PID namespace: no other Ray on this machine is touched.
"""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

from ding_ray.testing.hosts import Host, Hosts
from ding_ray.testing.netns import leftovers
from tests.distributed.conftest import REPO

pytestmark = pytest.mark.hosts

YAML = "cluster-local.yaml"
STOP_VALUE = 475  # CartPole-v1's, in ding_ray.configs.apex_dqn
JOB_BUDGET = 6000  # env steps of the ray job submit run: past the 4,096-step warm-up, into training
# where host 0 keeps the copy of the yaml (its HOME is a folder of its own)
COPY = f"/root/{YAML}"
SSH = ["ssh", "-o", "StrictHostKeyChecking=no", "-o", "UserKnownHostsFile=/dev/null", "-o", "LogLevel=ERROR"]


def readme_commands() -> list[str]:
    """The command lines of the README's block for machines of one's own, without their comments."""
    text = Path(REPO, "README.md").read_text()
    section = text[text.index("**On machines of your own**") :]
    start = section.index("```bash\n") + len("```bash\n")
    block = section[start : section.index("```", start)]
    return [line.split("  #")[0].strip() for line in block.splitlines() if line.strip()]


def in_client(client: Host, command: str, timeout: float, **kwargs) -> subprocess.CompletedProcess:
    """``command`` (a README line) in host 0, in the checkout (as the README's lines are run), on the
    test's copy of the yaml."""
    return client.run(
        ["bash", "-c", command.replace(YAML, COPY)], env=client_env(), timeout=timeout, cwd=REPO, **kwargs
    )


def client_env() -> dict[str, str]:
    return {"PATH": f"{Path(sys.executable).parent}:{os.environ['PATH']}", "PYTHONUNBUFFERED": "1"}


def on_host(client: Host, host: Host, command: str, timeout: float = 60) -> subprocess.CompletedProcess:
    """``command`` in ``host``'s login shell (as the launcher runs its commands), over ssh from host 0."""
    login = f"bash --login -c -i 'source ~/.bashrc; {command}'"
    return client.run([*SSH, f"root@{host.ip}", login], timeout=timeout)


def result_of(output: str) -> dict:
    """The result the example prints last (one JSON line)."""
    lines = [line for line in output.splitlines() if line.startswith("{") and '"stop"' in line]
    assert lines, output[-3000:]
    return json.loads(lines[-1])


def wait_for_nodes(client: Host, n: int, timeout: float = 360) -> None:
    """Until ``n`` nodes are alive. ``ray up`` returns once the head is up; the autoscaler then sets
    up each worker over ssh (the yaml's two pip installs) and starts its Ray: minutes on a loaded
    machine (in a full run beside other work, only the head was up 120 s after ``ray up``)."""
    count = "python -c \"import ray; ray.init(); print('alive', sum(x['Alive'] for x in ray.nodes()))\""
    deadline = time.monotonic() + timeout
    while True:
        seen = in_client(client, f"ray exec {YAML} {shlex.quote(count)}", timeout=60)
        if f"alive {n}" in seen.stdout:
            return
        assert time.monotonic() < deadline, (
            f"{n} nodes did not join: {seen.stdout[-2000:]}{seen.stderr[-2000:]}"
        )
        time.sleep(8)  # each look is a `ray exec`: a launcher, an ssh session and a driver


def refuses_bad_input(client: Host, worker: Host) -> None:
    """Wrong input fails before any actor starts, with a message that says what is wrong."""
    script = f"ray submit {YAML} examples/apex_dqn.py"
    unknown = in_client(client, f"{script} --set ray.learner_resources.no_such_node=1", timeout=180)
    assert unknown.returncode != 0 and "no_such_node" in unknown.stdout, unknown.stdout[-3000:]
    assert "collector-0" not in unknown.stdout

    lost = "RAY_ADDRESS=10.251.0.200:6379 python ~/ding-ray/examples/apex_dqn.py"  # no host there
    refused = in_client(client, f"ray exec {YAML} {shlex.quote(lost)}", timeout=180)
    assert refused.returncode != 0, refused.stdout[-3000:]
    assert "meant to join a Ray cluster (RAY_ADDRESS is set) but nothing answers" in refused.stdout

    assert on_host(client, worker, "pip uninstall -y -q ding_ray").returncode == 0
    missing = in_client(client, script, timeout=180)
    assert missing.returncode != 0, missing.stdout[-3000:]
    assert f"cannot import ding_ray ({worker.ip}: ModuleNotFoundError" in missing.stdout, missing.stdout[
        -3000:
    ]


def test_readme_cluster_commands_bring_up_run_and_take_down_cluster_local_yaml(ssh_tools):
    up, submit, dashboard, job, down = readme_commands()
    assert up.startswith("RAY_UP_enable_autoscaler_v2=0 ray up -y ") and down == f"ray down -y {YAML}"
    with Hosts(4, ssh=True) as hosts:
        client, head, workers = hosts[0], hosts[1], hosts[2:]
        config = yaml.safe_load(Path(REPO, YAML).read_text())
        config["provider"].update(head_ip=head.ip, worker_ips=[w.ip for w in workers])
        config["auth"]["ssh_user"] = "root"  # the key is the run's, in ~/.ssh/id_ed25519 of every host
        (client.home / YAML).write_text(yaml.safe_dump(config))

        started = in_client(client, up, timeout=240)
        assert started.returncode == 0, started.stdout[-3000:] + started.stderr[-3000:]
        wait_for_nodes(client, 3)

        before = [(w.bytes_sent, w.bytes_received) for w in workers]
        submitted = in_client(client, submit, timeout=300)
        assert submitted.returncode == 0, submitted.stdout[-3000:] + submitted.stderr[-3000:]
        result = result_of(submitted.stdout)
        assert result["stop"] and result["best_eval_return"] >= STOP_VALUE, result
        # the actors ran on the workers too: weights and transitions crossed their links
        moved = [(w.bytes_sent - s, w.bytes_received - r) for w, (s, r) in zip(workers, before)]
        print("bytes sent and received by the workers during ray submit:", moved, "result:", result)
        assert all(sent + received > 1e6 for sent, received in moved), moved

        assert dashboard.endswith(" &")
        dashboard_line = ["bash", "-c", dashboard[:-2].replace(YAML, COPY)]
        with client.popen(dashboard_line, env=client_env(), cwd=REPO) as forward:
            try:
                time.sleep(3)
                # the path to 475 was run above; this one shows the job path reaches the same
                # cluster and runs there, on a short budget
                jobbed = in_client(client, f"{job} --max-env-step {JOB_BUDGET}", timeout=300)
            finally:
                forward.kill()
        assert jobbed.returncode == 0, jobbed.stdout[-3000:] + jobbed.stderr[-3000:]
        assert result_of(jobbed.stdout)["env_steps"] >= JOB_BUDGET, jobbed.stdout[-3000:]

        refuses_bad_input(client, workers[-1])

        stopped = in_client(client, down, timeout=120)
        assert stopped.returncode == 0, stopped.stdout[-3000:] + stopped.stderr[-3000:]
        # the head's Ray is stopped; the workers' raylets exit once they lose the head (Ray's GCS
        # reconnect timeout), and the hosts' teardown ends whatever is left, checked below
        deadline = time.monotonic() + 20  # `ray stop` gives Ray's processes a moment to exit
        while "raylet" in (left := on_host(client, head, "ps -eo comm,args").stdout):
            assert time.monotonic() < deadline, left + stopped.stdout[-3000:]
            time.sleep(1)
    # nothing of the cluster is left on this machine (down may take a few seconds here: Ray's
    # worker processes of three nodes end with their hosts)
    assert leftovers(hosts.name) == []
