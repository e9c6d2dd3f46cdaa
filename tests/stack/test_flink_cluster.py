"""The same job on a real Flink cluster, without Docker: a standalone JobManager and two TaskManagers from the
PyFlink package (its bin/ scripts, a config of the test's own: RocksDB, incremental checkpoints, a slot each),
the histograms job submitted with `flink run --python ... --parallelism 2` as the compose file does, on topics of
its own. Its output is the mini-cluster's, row for row; the cluster is stopped by its PIDs at the end."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import urllib.request
import uuid
from pathlib import Path

import pyflink
import pytest
import yaml
from confluent_kafka import Consumer, KafkaError, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from sanlensctl import config
from tests.histogram_records import host_record, sample
from tests.support import ROOT, flink_job, wait_until

PYFLINK = Path(pyflink.__file__).parent
PARTITIONS = 2


def flat(tree: dict, prefix: str = "") -> dict:
    """Flink's YAML config as one level of dotted keys."""
    out = {}
    for key, value in tree.items():
        if isinstance(value, dict):
            out.update(flat(value, f"{prefix}{key}."))
        else:
            out[f"{prefix}{key}"] = value
    return out


def cluster_config(folder: Path, rest_port: int) -> dict:
    """What the cluster runs with, over the package's defaults (its Java 17 module options): the compose file's
    state settings, on loopback, with heaps small enough for a test."""
    return {
        "jobmanager.rpc.address": "127.0.0.1",
        "jobmanager.rpc.port": config.free_port(),
        "jobmanager.bind-host": "127.0.0.1",
        "jobmanager.memory.process.size": "768m",
        "rest.address": "127.0.0.1",
        "rest.bind-address": "127.0.0.1",
        "rest.port": rest_port,
        "taskmanager.host": "127.0.0.1",
        "taskmanager.bind-host": "127.0.0.1",
        "taskmanager.numberOfTaskSlots": 1,
        "taskmanager.memory.process.size": "1024m",
        "taskmanager.memory.managed.size": "128m",
        "parallelism.default": 2,
        "state.backend.type": "rocksdb",
        "execution.checkpointing.incremental": True,
        "execution.checkpointing.dir": (folder / "checkpoints").as_uri(),
        "state.backend.rocksdb.localdir": str(folder / "rocksdb"),
        "io.tmp.dirs": str(folder / "tmp"),
        "web.tmpdir": str(folder / "tmp"),
    }


def flink_home(folder: Path, rest_port: int) -> dict[str, str]:
    """The environment of PyFlink's bin/ scripts for a cluster with a conf folder of the test's own. The jobs have no
    Python function, so the cluster needs no flink-python jar in its lib/ (the venv stays as installed)."""
    conf = folder / "conf"
    shutil.copytree(PYFLINK / "conf", conf)
    settings = flat(yaml.safe_load((conf / "config.yaml").read_text())) | cluster_config(folder, rest_port)
    (conf / "config.yaml").write_text(yaml.safe_dump(settings))
    (folder / "tmp").mkdir()
    return {
        **config.tool_env(),
        "FLINK_CONF_DIR": str(conf),
        "FLINK_LOG_DIR": str(folder / "log"),
        "FLINK_PID_DIR": str(folder),
        # the scripts append each JVM's heap to these; the client's planner is left to C1, as in the stack
        "JVM_ARGS": config.pyflink_jvm_args(folder / "tmp"),
        "PYFLINK_CLIENT_EXECUTABLE": sys.executable,
    }


def start(script: str, env: dict[str, str], log: Path) -> subprocess.Popen:
    """A JobManager or TaskManager in the foreground: the script execs its JVM, whose PID is the Popen's."""
    with open(log, "ab") as out:
        return subprocess.Popen(
            [str(PYFLINK / "bin" / script), "start-foreground"], env=env, stdout=out, stderr=subprocess.STDOUT
        )


def rest(port: int, path: str) -> dict:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=5) as resp:
        return json.load(resp)


def registered(port: int) -> int:
    try:
        return len(rest(port, "/taskmanagers")["taskmanagers"])
    except OSError:
        return 0


def stop(processes: list[subprocess.Popen]) -> None:
    """SIGTERM to each (a JVM's shutdown hooks run), SIGKILL to what is left after 30 s."""
    for proc in processes:
        proc.terminate()
    for proc in processes:
        try:
            proc.wait(30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(10)


@pytest.fixture
def cluster(tmp_path):
    """A JobManager and two TaskManagers (a slot each) on free ports: (REST port, environment)."""
    port = config.free_port()
    env = flink_home(tmp_path, port)
    processes = [start("jobmanager.sh", env, tmp_path / "jobmanager.log")]
    processes += [start("taskmanager.sh", env, tmp_path / f"taskmanager-{i}.log") for i in range(2)]
    try:
        yield port, env
    finally:
        stop(processes)
        assert not [p.pid for p in processes if p.poll() is None]


def records() -> list[dict]:
    """Two volumes' bucket deltas over six windows, in and out of order, and a host disk's interval averages."""
    return [
        *(sample(s, d, b, n, volume=v) for s, d, b, n, v in [(1, "write", 4, 10, "v1"), (4, "read", 3, 2, "v2")]),
        *(sample(s, "write", 4 + s % 3, s, volume=f"v{s % 5}") for s in range(2, 60, 3)),
        host_record(10, read_latency=100.0, reads=50.0, writes=20.0, write_latency=3000.0),
        host_record(20, reads=7.5, read_latency=125.0),
    ]


def produce(topic: str) -> None:
    producer = Producer(config.kafka_client())
    for i, record in enumerate(records()):
        producer.produce(topic, json.dumps(record).encode(), partition=i % PARTITIONS)
    producer.flush(30)


def read_all(topics: list[str]) -> dict[str, list[str]]:
    """Every message of `topics` up to their ends (the jobs are done), sorted: each topic's rows as a multiset."""
    c = Consumer(
        {
            **config.kafka_client(),
            "group.id": f"read-{uuid.uuid4().hex[:6]}",
            "enable.partition.eof": True,
        }
    )
    partitions = [TopicPartition(t, p, 0) for t in topics for p in range(PARTITIONS)]
    c.assign(partitions)
    out, at_end = {t: [] for t in topics}, set()
    while len(at_end) < len(partitions):
        msg = c.poll(30)
        assert msg is not None, f"no end of {topics} in 30 s"
        if msg.error() is None:
            out[msg.topic()].append(msg.value().decode())
        else:
            assert msg.error().code() == KafkaError._PARTITION_EOF, msg.error()
            at_end.add((msg.topic(), msg.partition()))
    c.close()
    return {t: sorted(rows) for t, rows in out.items()}


def submit(port: int, env: dict[str, str], argv: list[str]) -> subprocess.CompletedProcess:
    """A job's `argv` (as tests.support.flink_job gives it) submitted as the compose file does, waiting for its end."""
    job = [str(PYFLINK / "bin" / "flink"), "run", "-m", f"127.0.0.1:{port}", "--python", *argv[1:]]
    return subprocess.run(job, env=env, capture_output=True, text=True, timeout=300, cwd=ROOT)


def test_the_histograms_job_on_a_standalone_cluster_writes_what_the_mini_cluster_does(stack, cluster, tmp_path):
    port, env = cluster
    run = uuid.uuid4().hex[:6]
    source, outputs = f"cluster-{run}.samples", [f"{side}-{run}.histograms" for side in ("mini", "cluster")]
    admin = AdminClient(config.kafka_client())
    for f in admin.create_topics([NewTopic(t, PARTITIONS, 1) for t in (source, *outputs)]).values():
        f.result(30)
    mini = None
    try:
        produce(source)
        argv, mini_env = flink_job("histograms", source, f"mini-{run}", parallelism=2)
        with open(tmp_path / "mini.log", "w") as log:  # the same job on its mini-cluster, while the cluster starts
            mini = subprocess.Popen(argv, env=mini_env, stdout=log, stderr=subprocess.STDOUT)
        wait_until(lambda: registered(port) == 2, 120, "two TaskManagers registered")
        argv, job_env = flink_job("histograms", source, f"cluster-{run}", parallelism=2)
        out = submit(port, {**env, "SANLENS_RUN": job_env["SANLENS_RUN"]}, argv)
        assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-3000:]
        assert mini.wait(300) == 0, (tmp_path / "mini.log").read_text()[-3000:]
        [job] = rest(port, "/jobs/overview")["jobs"]
        assert job["state"] == "FINISHED" and job["tasks"]["total"] == 2, job  # a subtask on each TaskManager
        assert "RocksDB" in rest(port, f"/jobs/{job['jid']}/checkpoints/config")["state_backend"]
        want, got = read_all(outputs).values()
        assert want and got == want
    finally:
        if mini:
            stop([mini])
        admin.delete_topics([source, *outputs])
