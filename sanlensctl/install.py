"""First-use set-up from the package registries into .sanlens/ (ignored by git); later runs reuse it.

The Python environment itself is created by the ./sanlens launcher before this module can run.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import os
import re
import shutil
import subprocess
import sys
import threading
import time
from concurrent.futures import FIRST_COMPLETED, ThreadPoolExecutor, wait
from pathlib import Path
from xml.etree import ElementTree

from sanlensctl import config
from sanlensctl.errors import SanlensError

TELEGRAF_VERSION = "1.37.2"
# Only the plugins the project's configs use: a full Telegraf build takes 11 minutes here, this one 90 s.
TELEGRAF_PLUGINS = [
    "inputs.exec",
    "inputs.file",
    "inputs.http",
    "inputs.internal",
    "inputs.snmp",
    "inputs.socket_listener",
    "inputs.sqlserver",
    "inputs.tail",
    "outputs.file",
    "outputs.health",
    "outputs.kafka",
    "parsers.influx",
    "parsers.json_v2",
    "serializers.influx",
    "serializers.json",
]
ALERTMANAGER_VERSION = "0.31.1"  # from v0.32 the module embeds a web UI build it does not ship: no `go install`
MAVEN_BUNDLES = {  # lib folder -> pom that lists its jars
    "kafka": config.ROOT / "sanlensctl" / "maven" / "kafka" / "pom.xml",
    "flink": config.ROOT / "sanlensctl" / "maven" / "flink" / "pom.xml",
}


def step(message: str) -> None:
    print(f"==> {message}", file=sys.stderr, flush=True)


def _digest(*parts: str | Path) -> str:
    h = hashlib.sha256()
    for part in parts:
        h.update(Path(part).read_bytes() if isinstance(part, Path) else part.encode())
    return h.hexdigest()


def _fresh(stamp: Path, digest: str) -> bool:
    return stamp.exists() and stamp.read_text().strip() == digest


def _run(argv: list[str], what: str, env: dict | None = None, cwd: Path | None = None) -> None:
    log = config.STATE / f"install-{what.split()[-1]}.log"  # one log a step: the steps run at the same time
    with open(log, "ab") as fh:
        fh.write(f"\n$ {' '.join(argv)}\n".encode())
        fh.flush()
        rc = subprocess.call(argv, stdout=fh, stderr=subprocess.STDOUT, env=env, cwd=cwd)
    if rc != 0:
        raise SanlensError(f"{what} failed (exit {rc}): see {log}")


def require_java() -> str:
    java_home = config.tool_env().get("JAVA_HOME")
    java = str(Path(java_home, "bin", "java")) if java_home else shutil.which("java")
    if not java or not Path(java).exists():
        raise SanlensError(
            "Java 17 is required for Kafka and Flink and was not found: install it "
            "(Debian: apt-get install openjdk-17-jdk-headless) or set JAVA_HOME"
        )
    out = subprocess.run([java, "-XX:-UsePerfData", "-version"], capture_output=True, text=True).stderr
    version = out.split('"')[1] if '"' in out else "?"
    if not version.startswith("17"):
        raise SanlensError(
            f"Java 17 is required (found {version} at {java}): install openjdk-17 or point JAVA_HOME at one"
        )
    return java


def _require_tool(name: str, hint: str) -> str:
    path = shutil.which(name)
    if not path:
        raise SanlensError(f"{name} is required to set up sanlens and was not found: {hint}")
    return path


def maven_jars() -> None:
    for name, pom in MAVEN_BUNDLES.items():
        target = config.LIB / name
        stamp = target / ".pom.sha256"
        digest = _digest(pom)
        if _fresh(stamp, digest):
            continue
        mvn = _require_tool("mvn", "install Maven 3 (Debian: apt-get install maven)")
        step(f"fetching {name} jars with Maven into .sanlens/lib/{name}")
        shutil.rmtree(target, ignore_errors=True)
        t0 = time.monotonic()
        _run(
            [
                mvn,
                "-B",
                "-q",
                "dependency:copy-dependencies",
                f"-DoutputDirectory={target}",
                "-DincludeScope=runtime",
            ],
            f"Maven download of the jars for {name}",
            env=config.tool_env(),
            cwd=pom.parent,
        )
        stamp.write_text(digest)
        step(f"{name}: {len(list(target.glob('*.jar')))} jars in {time.monotonic() - t0:.0f} s")


FUNCTIONS_POM = config.ROOT / "flink-jobs" / "pom.xml"
FUNCTIONS_JAR = config.LIB / "jobs" / "sanlens-functions.jar"
FUNCTIONS_BUILD = config.STATE / "build" / "functions"
# Maven's JVM lives for seconds: C1 alone ends it sooner (docs/benchmarks.md, "The jobs' Java"); a module this
# size needs little heap.
MAVEN_JVM = "-XX:TieredStopAtLevel=1 -Xmx512m"


def maven_java(goals: list[str], build: Path, log: Path) -> int:
    """Maven on the jobs' Java (flink-jobs/pom.xml), its output in `build`, its own output appended to `log`; the
    exit status. Offline first: after the first build ~/.m2 holds every plugin and jar, and the build neither waits
    on nor needs the network; online when something is missing there (a fresh machine, a version changed)."""
    mvn = _require_tool("mvn", "install Maven 3 (Debian: apt-get install maven)")
    env = config.tool_env()
    env["MAVEN_OPTS"] = f"{env.get('MAVEN_OPTS', '')} {MAVEN_JVM}".strip()
    log.parent.mkdir(parents=True, exist_ok=True)
    for offline in (["-o"], []):
        argv = [mvn, "-B", "-q", *offline, "-f", str(FUNCTIONS_POM), f"-Dsanlens.build={build}", *goals]
        with open(log, "ab") as fh:
            fh.write(f"\n$ {' '.join(argv)}\n".encode())
            fh.flush()
            start = fh.tell()
            rc = subprocess.call(argv, stdout=fh, stderr=subprocess.STDOUT, env=env)
        with open(log, "rb") as fh:
            fh.seek(start)
            missing = b"in offline mode" in fh.read()  # "Cannot access central (...) in offline mode and ..."
        if rc == 0 or not missing:
            break
    return rc


@contextlib.contextmanager
def _locked(path: Path):
    """An exclusive lock on `path` for the block: two processes (two test runs) never build into one folder at once."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


def function_jar() -> Path:
    """The jobs' Java functions and formats (flink-jobs/<job>/java/, with their META-INF/services files), built by
    Maven from flink-jobs/pom.xml against Flink's own jars at the version PyFlink ships (`provided`), into
    .sanlens/lib/jobs; rebuilt from scratch when the pom or a file of a java/ folder changes. The JUnit tests
    (java-test/) are not run here: `./sanlens test` runs them (JavaTests)."""
    inputs = [FUNCTIONS_POM, *sorted(p for p in FUNCTIONS_POM.parent.glob("*/java/**/*") if p.is_file())]
    stamp = FUNCTIONS_JAR.with_suffix(".sha256")
    digest = _digest(*inputs, *(str(p.relative_to(config.ROOT)) for p in inputs))
    if FUNCTIONS_JAR.exists() and _fresh(stamp, digest):
        return FUNCTIONS_JAR
    with _locked(FUNCTIONS_BUILD.parent / "functions.lock"):
        if FUNCTIONS_JAR.exists() and _fresh(stamp, digest):  # another process built it meanwhile
            return FUNCTIONS_JAR
        require_java()
        step(f"building the jobs' Java functions with Maven into .sanlens/lib/jobs/{FUNCTIONS_JAR.name}")
        t0 = time.monotonic()
        shutil.rmtree(FUNCTIONS_BUILD, ignore_errors=True)
        log = config.STATE / "install-functions.log"
        if maven_java(["package", "-Dmaven.test.skip=true"], FUNCTIONS_BUILD, log) != 0:  # a broken test: still a jar
            raise SanlensError(f"the Maven build of the jobs' Java functions failed: see {log}")
        FUNCTIONS_JAR.parent.mkdir(parents=True, exist_ok=True)
        partial = FUNCTIONS_JAR.with_suffix(".jar.partial")
        shutil.copyfile(FUNCTIONS_BUILD / FUNCTIONS_JAR.name, partial)
        os.replace(partial, FUNCTIONS_JAR)  # a job starting now loads the old jar or the new one, never half of one
        stamp.write_text(digest)
        step(f"functions: {FUNCTIONS_JAR.name} in {time.monotonic() - t0:.0f} s")
    return FUNCTIONS_JAR


class JavaTests:
    """The JUnit tests of the jobs' Java (flink-jobs/<job>/java-test/): `mvn test` in a folder of the test run's
    own (`build`), in the background from start() on; finish() waits for it and raises on a failure, naming the
    failed tests."""

    def __init__(self, build: Path):
        self.build = build
        self.log = build.parent / f"{build.name}.log"
        self.thread: threading.Thread | None = None
        self.rc: int | None = None
        self.t0 = 0.0

    def start(self) -> JavaTests:
        shutil.rmtree(self.build, ignore_errors=True)
        self.log.unlink(missing_ok=True)
        self.t0 = time.monotonic()

        def run() -> None:
            self.rc = maven_java(["test"], self.build, self.log)

        # not a daemon: when the lint fails first, the command still waits for Maven instead of orphaning it
        self.thread = threading.Thread(target=run, name="java-tests")
        self.thread.start()
        return self

    def finish(self) -> str:
        """One line: how many tests ran and how long the build and tests took; raises when one failed."""
        assert self.thread is not None
        self.thread.join()
        counts = dict.fromkeys(("tests", "failures", "errors", "skipped"), 0)
        for report in (self.build / "surefire-reports").glob("TEST-*.xml"):
            suite = ElementTree.parse(report).getroot()
            for name in counts:
                counts[name] += int(suite.get(name, 0))
        failed = counts["failures"] + counts["errors"]
        if self.rc != 0 or not counts["tests"]:
            errors = []  # what failed, up to Maven's own advice
            for line in re.sub(r"\x1b\[[0-9;]*m", "", self.log.read_text(errors="replace")).splitlines():
                if line.startswith("[ERROR]") and line.strip() != "[ERROR]":
                    errors.append(line)
                if line.startswith("[ERROR] Failed to execute goal"):
                    break
            raise SanlensError(
                f"the Java build or tests failed ({failed} of {counts['tests']} tests; mvn exit {self.rc}), "
                f"flink-jobs/*/java-test/, log {self.log}:\n" + "\n".join(errors[:40])
            )
        return (
            f"Java tests (flink-jobs/*/java-test, mvn test): {counts['tests']} run, {counts['skipped']} skipped, "
            f"none failed, in {time.monotonic() - self.t0:.0f} s"
        )


def _go_install(name: str, version: str, module: str, build_flags: list[str], label: str) -> Path:
    """`go install` of `module`@v`version` into .sanlens/bin, again only when the version or the flags change
    (Go's own user-level caches: GOMODCACHE, GOCACHE)."""
    binary = config.BIN / name
    stamp = config.BIN / f".{name}.build"
    digest = _digest(version, *build_flags)
    if binary.exists() and _fresh(stamp, digest):
        return binary
    go = _require_tool("go", "install Go 1.24 or newer (https://go.dev/doc/install) and put it on PATH")
    step(f"building {label} (first run: about 2 minutes)")
    config.BIN.mkdir(parents=True, exist_ok=True)
    env = dict(os.environ, GOBIN=str(config.BIN), CGO_ENABLED="0")
    t0 = time.monotonic()
    _run([go, "install", *build_flags, f"{module}@v{version}"], f"the build of {name}", env=env)
    stamp.write_text(digest)
    step(f"{name} built in {time.monotonic() - t0:.0f} s")
    return binary


def telegraf() -> Path:
    return _go_install(
        "telegraf",
        TELEGRAF_VERSION,
        "github.com/influxdata/telegraf/cmd/telegraf",
        [
            "-tags",
            ",".join(["custom"] + TELEGRAF_PLUGINS),
            "-ldflags",
            f"-s -w -X github.com/influxdata/telegraf/internal.Version={TELEGRAF_VERSION}",
        ],
        f"Telegraf {TELEGRAF_VERSION} with {len(TELEGRAF_PLUGINS)} plugins",
    )


def alertmanager() -> Path:
    """Prometheus Alertmanager (from v0.32 its module embeds a web UI build it does not ship: no `go install`)."""
    return _go_install(
        "alertmanager",
        ALERTMANAGER_VERSION,
        "github.com/prometheus/alertmanager/cmd/alertmanager",
        ["-ldflags", f"-s -w -X github.com/prometheus/common/version.Version={ALERTMANAGER_VERSION}"],
        f"Alertmanager {ALERTMANAGER_VERSION}",
    )


def dbt_venv() -> Path:
    requirements = config.ROOT / "dbt" / "requirements.txt"
    stamp = config.DBT_VENV / ".requirements.sha256"
    digest = _digest(requirements)
    dbt = config.DBT_VENV / "bin" / "dbt"
    if dbt.exists() and _fresh(stamp, digest):
        return dbt
    step("setting up dbt in .sanlens/dbt-venv (its own environment: dbt needs protobuf 6, PyFlink an older one)")
    shutil.rmtree(config.DBT_VENV, ignore_errors=True)
    _run([sys.executable, "-m", "venv", str(config.DBT_VENV)], "creating the environment of dbt")
    _run(
        [str(config.DBT_VENV / "bin" / "pip"), "install", "--disable-pip-version-check", "-q", "-r", str(requirements)],
        "pip install of dbt",
    )
    stamp.write_text(digest)
    return dbt


CHROMIUM_MISSING = (
    "Chromium (for the report's PNGs and its test) was not found: install it (Debian: apt-get install chromium) "
    "or put it on PATH; ./sanlens up installs it when run as root"
)


def _find_chromium() -> str | None:
    return shutil.which("chromium") or shutil.which("chromium-browser")


def chromium() -> None:
    """Headless Chromium for the report's PNGs (through kaleido) and the report's browser test: part of the set-up.
    Debian's package is installed with apt-get when it is missing and we are root; otherwise one line says what to
    do, and the rest of the stack is set up without it (only `report` and `test` need it)."""
    if _find_chromium():
        return
    apt = shutil.which("apt-get")
    if not apt or os.geteuid() != 0:
        step(f"skipped: {CHROMIUM_MISSING}")
        return
    step("installing Debian's chromium (first run: about 1 minute)")
    env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
    _run([apt, "update", "-q"], "apt-get update", env=env)
    _run([apt, "install", "-y", "-q", "--no-install-recommends", "chromium"], "apt-get install chromium", env=env)


def require_chromium() -> str:
    """Chromium's path, or the one-line error that says what is missing; never installs anything."""
    found = _find_chromium()
    if not found:
        raise SanlensError(CHROMIUM_MISSING)
    return found


def everything() -> None:
    """All that `up`, `demo` and `test` need. Each part is skipped when already in place; the parts that
    are missing are set up at the same time (downloads and builds overlap), with a line every 30 s."""
    config.STATE.mkdir(parents=True, exist_ok=True)
    require_java()
    parts = {
        "Maven jars": maven_jars,
        "Java functions": function_jar,
        "Telegraf build": telegraf,
        "Alertmanager build": alertmanager,
        "dbt environment": dbt_venv,
        "Chromium": chromium,
    }
    t0 = time.monotonic()
    with ThreadPoolExecutor(len(parts)) as pool:
        running = {pool.submit(part): name for name, part in parts.items()}
        while running:
            done, _ = wait(running, timeout=30, return_when=FIRST_COMPLETED)
            for future in done:
                running.pop(future)
                future.result()  # the first failure ends the set-up with its own message
            if running and not done:
                step(f"still setting up ({time.monotonic() - t0:.0f} s): {', '.join(sorted(running.values()))}")
