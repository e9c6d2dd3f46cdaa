"""Who sees what (clickhouse/access/roles.yaml, docs/security.md): the roles as a ClickHouse server gets them, the same
rules on the embedded server per query, the credentials every request must carry, bad input at the door, and one set
of versions in both modes. The acceptance on the tests' stack: after a demo of two customers, each table and mart the
globex role reads holds only globex's sites, and the marts' totals for globex are the analyst's filtered to globex."""

from __future__ import annotations

import json
import os
import re
import socket
import stat
import time
import urllib.error
import urllib.request
from datetime import UTC, timedelta

import pytest
import yaml
from clickhouse_connect.driver.exceptions import DatabaseError

from clickhouse import roles
from grafana import organisations
from sanlensctl import config, db, migrate
from tests.dashboard_load import dashboard_queries
from tests.support import ROOT, EmbeddedServer, authorized, sanlens

TABLES = {  # a store in small: the columns that decide a customer's rows
    "sanlens.metrics": {"ts", "site", "host"},
    "sanlens.topology": {"customer", "site", "array"},
    "sanlens.deadletter": {"payload", "reason"},
    "sanlens.service_time_hist_10s": {"site", "ios"},
    "sanlens.service_time_hist_fleet_1h": {"array_model", "ios"},
    "sanlens_marts.host_health": {"site", "host"},
}


def dashboard_tables() -> set[str]:
    """Every table the dashboards and Grafana's alert rules query."""
    text = "".join(p.read_text() for p in (ROOT / "grafana").glob("**/*") if p.suffix in (".json", ".yaml"))
    return set(re.findall(r"\bsanlens(?:_marts)?\.[a-z_0-9]+", text))


def test_the_dashboards_role_reads_what_the_dashboards_query_and_not_the_raw_histograms():
    dashboards = roles.roles()["dashboards"]
    assert dashboard_tables() and all(dashboards.may_read(t) for t in dashboard_tables()), dashboard_tables()
    for raw in ("sanlens.service_time_hist_10s", "sanlens.deadletter", "sanlens.service_time_hist_messages"):
        assert raw not in dashboard_tables() and not dashboards.may_read(raw)
    assert dashboards.readonly and roles.roles()["analyst"].readonly and not roles.roles()["ingest"].readonly


def test_the_server_statements_parse_and_each_customer_policy_is_restrictive():
    import chdb

    statements = roles.server_statements(["acme", "globex"], {"ingest": "pw'1", "customer_globex": "x"}, TABLES)
    for statement in statements:  # ClickHouse's own parser, of the release the local stack runs
        chdb.query(f"SELECT formatQuerySingleLine({roles.quote(statement)})")
    policies = [s for s in statements if s.startswith("CREATE ROW POLICY OR REPLACE customer_globex ")]
    assert {s.split(" ON ")[1].split()[0] for s in policies} == {
        "sanlens.metrics",
        "sanlens.topology",
        "sanlens.service_time_hist_10s",
        "sanlens_marts.host_health",
        "system.tables",  # none of their rows: below
        "system.columns",
    }
    assert all(" AS RESTRICTIVE FOR SELECT USING " in s and s.endswith("TO customer_globex") for s in policies)
    grants = [s for s in statements if s.startswith("GRANT SELECT") and s.endswith("TO customer_globex")]
    assert not [g for g in grants if "deadletter" in g or "fleet_1h" in g or "*" in g], grants
    assert "CREATE ROLE IF NOT EXISTS customer_acme" in statements
    assert any(s.startswith("CREATE USER IF NOT EXISTS ingest IDENTIFIED") for s in statements)
    assert not any(s.startswith("CREATE USER IF NOT EXISTS analyst") for s in statements)  # no password: no user
    profile = next(s for s in statements if s.startswith("CREATE SETTINGS PROFILE OR REPLACE customer_globex_limits"))
    assert "readonly = 1" in profile
    # system.tables and system.columns, which every user of a server reads, show a customer none of their rows
    for table in ("system.tables", "system.columns"):
        assert f"CREATE ROW POLICY OR REPLACE customer_globex ON {table} AS RESTRICTIVE FOR SELECT USING 0 TO " \
               "customer_globex" in statements, table  # fmt: skip
        assert f"CREATE ROW POLICY OR REPLACE sanlens_every_row ON {table} AS PERMISSIVE FOR SELECT USING 1 TO ALL" \
               in statements, table  # fmt: skip
    assert not [s for s in statements if "system." in s and "TO analyst" in s], "the other roles keep the catalogue"


def test_customers_come_from_the_data_and_the_file():
    class Client:
        def query(self, sql):
            assert "sanlens.topology" in sql
            return type("R", (), {"result_rows": [("acme",), ("Globex Inc",)]})

    assert set(roles.customers(Client())) == {"acme", "Globex Inc", *roles.file_customers()}
    assert roles.customer_role("Globex Inc") == "customer_globex_inc"


def test_passwords_are_generated_once_into_a_file_only_its_owner_reads(tmp_path):
    path = tmp_path / "state" / "passwords.json"
    first = roles.ensure_passwords(["sanlens", "ingest"], path)
    assert stat.S_IMODE(path.stat().st_mode) == 0o600 and len(first["ingest"]) >= 24
    again = roles.ensure_passwords(["sanlens", "ingest", "customer_acme"], path)
    assert again["ingest"] == first["ingest"] and "customer_acme" in again


def test_compose_runs_the_local_stack_s_kafka_and_clickhouse_release_line():
    import chdb

    compose = yaml.safe_load((ROOT / "docker-compose.yml").read_text())["services"]
    pom = (ROOT / "sanlensctl" / "maven" / "kafka" / "pom.xml").read_text()
    kafka = re.search(r"<artifactId>kafka_2\.13</artifactId><version>([^<]+)</version>", pom).group(1)
    assert compose["kafka"]["image"] == f"apache/kafka:{kafka}"
    chdb_line = ".".join(chdb.query("SELECT version()", "CSV").bytes().decode().strip().strip('"').split(".")[:2])
    assert compose["clickhouse"]["image"].split(":")[1] == chdb_line, (compose["clickhouse"]["image"], chdb_line)


# -- the embedded server ----------------------------------------------------------------------------------------
@pytest.fixture
def two_customers(embedded):
    """The embedded server with the store's schema and two customers' rows (acme, globex)."""
    migrate.apply(embedded.url, quiet=True)
    admin = embedded.client()
    admin.command(
        "INSERT INTO sanlens.topology (customer, site, array, valid_from) VALUES "
        "('acme', 'acme-east', 'a1', now()), ('globex', 'globex-west', 'g1', now())"
    )
    admin.command(
        "INSERT INTO sanlens.metrics (site, host, ts) VALUES ('acme-east', 'h1', now()), ('globex-west', 'h2', now())"
    )
    for user in ("analyst", "dashboards", "ingest", "customer_globex"):
        roles.password(user)
    return embedded


def refused(client, sql: str) -> str:
    with pytest.raises(DatabaseError) as info:
        client.query(sql)
    return re.search(r"Code: (\d+)", str(info.value)).group(1)


def test_a_customer_reads_only_its_own_sites_and_writes_nothing(two_customers):
    globex = db.client(two_customers.url, user="customer_globex")
    assert globex.query("SELECT DISTINCT site FROM sanlens.metrics").result_rows == [("globex-west",)]
    assert globex.query("SELECT customer FROM sanlens.topology").result_rows == [("globex",)]
    assert globex.query("WITH s AS (SELECT site FROM sanlens.metrics) SELECT DISTINCT site FROM s").result_rows == [
        ("globex-west",)
    ]
    for sql in (
        "SELECT count() FROM sanlens.deadletter",  # no site: other customers' data
        "SELECT count() FROM sanlens.service_time_hist_fleet_1h",
        "SELECT * FROM merge('sanlens', '^metrics$')",  # around the filters
        "SELECT file('/etc/hostname')",  # outside the store
        "SELECT * FROM url('http://127.0.0.1:1/', 'CSV', 'a String')",
        "SELECT count() FROM system.processes",  # others' queries
        "SELECT 'x' IN sanlens.deadletter",  # a table as a set
        "SELECT 1 INTO OUTFILE 'x.csv'",
    ):
        assert refused(globex, sql) == "497", sql
    for sql in (
        "INSERT INTO sanlens.metrics (site) VALUES ('globex-west')",
        "ALTER TABLE sanlens.metrics DELETE WHERE 1",
        "DROP TABLE sanlens.metrics",
        "SELECT site FROM sanlens.metrics SETTINGS additional_table_filters = {'sanlens.metrics': '1'}",
    ):
        assert refused(globex, sql) == "164", sql
    # a setting of the request's own cannot widen the filter: the role's are set after it
    status, body = raw(two_customers.url, "SELECT DISTINCT site FROM sanlens.metrics", "customer_globex",
                       additional_table_filters="{'sanlens.metrics': '1'}")  # fmt: skip
    assert (status, body) == (200, "globex-west\n")
    assert refused(globex, "SELEC 1") == "62" and refused(globex, "SELECT 1; SELECT 2") == "62"


def test_a_customer_learns_no_table_s_row_count_or_size_from_the_catalogue(two_customers):
    """system.tables and system.columns hold every table's rows and bytes, the whole install base's: withheld from a
    customer (roles.yaml, `withheld`), with the views information_schema has over them; the other read-only roles and
    what clients ask on connecting are unchanged."""
    globex = db.client(two_customers.url, user="customer_globex")
    for sql in (
        "SELECT total_rows, total_bytes FROM system.tables WHERE database = 'sanlens'",
        "SELECT sum(data_compressed_bytes) FROM system.columns",
        "SELECT table_rows FROM information_schema.tables",
        "SELECT table_rows FROM INFORMATION_SCHEMA.TABLES",
        "SELECT count() FROM (SELECT * FROM system.tables)",
        "SELECT sum(rows) FROM system.parts",
        "SELECT count() FROM system.query_log",
        "EXPLAIN ESTIMATE SELECT * FROM sanlens.metrics",  # the parts' rows, every customer's
        "EXPLAIN indexes = 1 SELECT * FROM sanlens.metrics",
    ):
        assert refused(globex, sql) == "497", sql
    assert analyst_explains(two_customers.url)
    assert globex.command("SELECT count() FROM system.databases WHERE name = 'sanlens'") == 1
    assert globex.query("SELECT value FROM system.settings WHERE name = 'readonly'").result_rows == [("1",)]
    analyst = db.client(two_customers.url, user="analyst")
    assert analyst.command("SELECT total_rows FROM system.tables WHERE database = 'sanlens' AND name = 'metrics'") == 2


def analyst_explains(url: str) -> bool:
    return (
        "metrics"
        in db.client(url, user="analyst").query("EXPLAIN ESTIMATE SELECT * FROM sanlens.metrics").result_rows[0]
    )


def test_analyst_reads_everything_dashboards_what_the_dashboards_need_ingest_inserts(two_customers):
    analyst = db.client(two_customers.url, user="analyst")
    assert analyst.query("SELECT site FROM sanlens.metrics ORDER BY site").result_rows == [
        ("acme-east",),
        ("globex-west",),
    ]
    assert refused(analyst, "DROP TABLE sanlens.metrics") == "164"
    dashboards = db.client(two_customers.url, user="dashboards")
    assert dashboards.command("SELECT count() FROM sanlens.metrics") == 2
    assert refused(dashboards, "SELECT count() FROM sanlens.service_time_hist_10s") == "497"
    ingest = db.client(two_customers.url, user="ingest")
    ingest.insert("sanlens.metrics", [["acme-east", "h3"]], column_names=["site", "host"])
    assert refused(ingest, "DROP TABLE sanlens.topology") == "497"
    assert refused(ingest, "CREATE TABLE sanlens.x (a UInt8) ENGINE = Memory") == "497"
    assert refused(ingest, "SELECT count() FROM sanlens_marts.anything") == "497"


def raw(url: str, sql: str, user: str | None = None, password: str | None = None, **params) -> tuple[int, str]:
    import urllib.parse

    query = "/?" + urllib.parse.urlencode(params) if params else "/"
    request = authorized(url + query, sql.encode(), user) if password is None else urllib.request.Request(
        url + query, sql.encode(), headers={"X-ClickHouse-User": user or "", "X-ClickHouse-Key": password})  # fmt: skip
    try:
        with urllib.request.urlopen(request, timeout=30) as resp:
            return resp.status, resp.read().decode()
    except urllib.error.HTTPError as err:
        return err.code, err.read().decode()


def test_a_request_without_credentials_or_with_a_wrong_password_is_refused_and_logged(tmp_path):
    server = EmbeddedServer(tmp_path / "ch").start()
    try:
        request = urllib.request.Request(server.url + "/", data=b"SELECT 1")  # no credentials at all
        with pytest.raises(urllib.error.HTTPError) as info:
            urllib.request.urlopen(request, timeout=10)
        assert info.value.code == 401 and info.value.headers["X-ClickHouse-Exception-Code"] == "516"
        assert raw(server.url, "SELECT 1", "sanlens", "wrong")[0] == 401
        assert raw(server.url, "SELECT 1", "nobody", "x")[0] == 401
        assert raw(server.url, "SELECT 1") == (200, "1\n")
    finally:
        server.stop()
    log = server.proc.stdout.read()
    assert re.search(r"failed login: user 'default' from 127\.0\.0\.1:\d+", log), log
    assert re.search(r"failed login: user 'sanlens' from 127\.0\.0\.1:\d+", log), log


def received(sock: socket.socket) -> str:
    """Everything the server sends until it closes the connection."""
    sock.settimeout(10)
    chunks = []
    while chunk := sock.recv(4096):
        chunks.append(chunk)
    return b"".join(chunks).decode()


def test_bad_input_gets_clickhouse_s_error_codes_and_never_stops_the_server(tmp_path):
    server = EmbeddedServer(tmp_path / "ch", extra=["--max-request-size", "10000", "--client-timeout", "1"]).start()
    try:
        # over the size limit: refused before it is read
        status, body = raw(server.url, "SELECT '" + "x" * 20_000 + "'")
        assert status == 413 and body.startswith("Code: 36.") and "--max-request-size" in body
        # a slow client: sends half its body, then nothing; dropped after the client timeout
        with socket.create_connection(("127.0.0.1", server.port)) as slow:
            slow.sendall(b"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\nSELECT")
            started = time.monotonic()
            answer = received(slow)
            assert time.monotonic() - started < 10 and answer.startswith("HTTP/1.1 408") and "Code: 209." in answer
        # a client that opens and says nothing
        with socket.create_connection(("127.0.0.1", server.port)) as silent:
            silent.settimeout(10)
            assert silent.recv(4096) == b""  # closed by the server
        # malformed: a body that does not decode, a broken chunk, a query that does not parse
        request = authorized(server.url + "/", b"not gzip")
        request.add_header("Content-Encoding", "gzip")
        with pytest.raises(urllib.error.HTTPError) as info:
            urllib.request.urlopen(request, timeout=10)
        assert info.value.code == 400 and info.value.headers["X-ClickHouse-Exception-Code"] == "27"
        with socket.create_connection(("127.0.0.1", server.port)) as broken:
            broken.sendall(b"POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n")
            assert received(broken).startswith("HTTP/1.1 400")
        assert raw(server.url, "SELECT 1 +")[0] == 400
        assert raw(server.url, "SELECT 1") == (200, "1\n")  # still serving
        assert server.proc.poll() is None
    finally:
        server.stop()


# -- the acceptance, on the tests' stack --------------------------------------------------------------------------
@pytest.fixture(scope="module")
def demo_of_two_customers(demo_twice):
    """The default demo (acme and globex) played on the tests' stack, its marts built."""
    customers = dict(
        db.client()
        .query(
            "SELECT customer, groupUniqArray(site) FROM sanlens.topology WHERE customer IN {c:Array(String)} "
            "GROUP BY customer",
            parameters={"c": ["acme", "globex"]},  # the demo's (other tests' fleets have customers of their own)
        )
        .result_rows
    )
    assert set(customers) == {"acme", "globex"}, customers
    return customers


def test_globex_reads_only_its_own_sites_and_the_marts_totals_are_the_analyst_s_filtered(demo_of_two_customers):
    globex_sites = set(demo_of_two_customers["globex"])
    admin, analyst = db.client(), db.client(user="analyst")
    roles.password("customer_globex")
    globex = db.client(user="customer_globex")
    role = roles.roles(list(demo_of_two_customers))["customer_globex"]
    checked = []
    marts = {  # dbt's tables (its views read rows still arriving: the two users' queries would see different ones)
        f"sanlens_marts.{r[0]}"
        for r in admin.query(
            "SELECT name FROM system.tables WHERE database = 'sanlens_marts' AND engine != 'View'"
        ).result_rows
    }
    assert marts
    for table, columns in sorted(roles.store_tables(admin).items()):
        readable = role.may_read(table) and role.row_filter(columns) != "0"
        if not readable:
            assert refused(globex, f"SELECT count() FROM {table}") == "497", table
            continue
        column = "site" if "site" in columns else "customer"
        seen = {r[0] for r in globex.query(f"SELECT DISTINCT {column} FROM {table}").result_rows}
        assert seen <= (globex_sites if column == "site" else {"globex"}), (table, seen)
        if table in marts:
            described = admin.query(f"DESCRIBE TABLE {table}").result_rows
            types = {r[0]: r[1] for r in described}
            numbers = [c for c, t in types.items() if re.match(r"(Nullable\()?(U?Int|Float|Decimal)", t)]
            totals = "count()" + "".join(f", round(sum(`{c}`), 6)" for c in numbers)
            where = "site IN {s:Array(String)}" if column == "site" else "customer = 'globex'"
            assert (
                globex.query(f"SELECT {totals} FROM {table}").result_rows
                == analyst.query(
                    f"SELECT {totals} FROM {table} WHERE {where}", parameters={"s": sorted(globex_sites)}
                ).result_rows
            ), table
        checked.append(table)
    assert "sanlens.metrics" in checked and any(t.startswith("sanlens_marts.") for t in checked), checked
    assert globex.command("SELECT count() FROM sanlens.metrics") > 0
    assert admin.command("SELECT count() FROM sanlens.metrics") > globex.command("SELECT count() FROM sanlens.metrics")
    for sql in ("INSERT INTO sanlens.metrics (site) VALUES ('x')", "ALTER TABLE sanlens.metrics DELETE WHERE 1",
                "DROP TABLE sanlens_marts.host_health"):  # fmt: skip
        assert refused(globex, sql) == "164", sql
    dashboards = db.client(user="dashboards")
    assert refused(dashboards, "SELECT count() FROM sanlens.service_time_hist_10s") == "497"
    assert raw(config.CLICKHOUSE_URL, "SELECT 1", "sanlens", "wrong")[0] == 401
    out = sanlens(
        "sql", "SELECT DISTINCT site FROM sanlens.metrics ORDER BY site", "--as", "globex", "--format", "json"
    )
    assert out.returncode == 0 and {r["site"] for r in json.loads(out.stdout)} <= globex_sites, out.stdout + out.stderr
    nobody = f"nobody{os.getpid()}"  # no customer of any test's fleet (the rollout's initech plays beside this one)
    unknown = sanlens("sql", "SELECT 1", "--as", nobody)
    assert unknown.returncode != 0 and f"unknown role '{nobody}': the roles are " in unknown.stderr, unknown.stderr
    assert f"customer_{nobody}" not in roles.read_passwords(), "no password is made for a role that does not exist"


def test_each_customer_s_grafana_data_source_reads_only_its_own_sites(demo_of_two_customers, monkeypatch):
    """No Grafana runs on the local stack (none is obtainable without Docker): each organisation's provisioned data
    source (grafana/provisioning/datasources/clickhouse.yaml) is tried with its own connection settings, its user and
    the password its ${VARIABLE} names (set as Grafana's environment would be, from the local stack's passwords),
    against the stack's ClickHouse, on the tables the dashboards read."""
    provisioned = yaml.safe_load(organisations.DATASOURCES.read_text())["datasources"]
    by_org = {o.org_id: o for o in organisations.organisations()}
    assert {o.name for o in by_org.values()} >= set(demo_of_two_customers), "every customer of the demo has its org"
    every_site = {s for sites in demo_of_two_customers.values() for s in sites}
    for source in provisioned:
        user = source["jsonData"]["username"]
        variable = re.fullmatch(r"\$\{(\w+)\}", source["secureJsonData"]["password"]).group(1)
        monkeypatch.setenv(variable, roles.password(user))  # what compose passes to Grafana
        client = db.client(user=user, password=os.environ[variable])
        org = by_org[source["orgId"]]
        sites = {r[0] for r in client.query("SELECT DISTINCT site FROM sanlens.metrics").result_rows}
        if org.role == organisations.MAIN_ROLE:  # the vendor's: the whole install base
            assert sites >= every_site, (org, sites)
            continue
        own = set(demo_of_two_customers.get(org.name, ()))
        assert sites and sites <= own, (org, sites)
        for table in ("sanlens.path_latency", "sanlens.service_time_hist_1m", "sanlens_marts.host_health"):
            seen = {r[0] for r in client.query(f"SELECT DISTINCT site FROM {table}").result_rows}
            assert seen <= own, (org, table, seen)


def test_every_query_of_each_organisation_s_dashboards_runs_as_its_role(demo_of_two_customers):
    """Each organisation's dashboards (its provider's folder, grafana/provisioning/dashboards/sanlens.yaml): every
    panel's, variable's and annotation's query, as Grafana sends it over the demo's span, run as the organisation's
    role. None is refused: a customer's dashboards read nothing its role may not (the fleet level, which pools
    every customer's I/Os, is refused even in a branch of a UNION ALL that reads nothing)."""
    folders = {
        organisations.DASHBOARDS_IN_CONTAINER: ROOT / "grafana" / "dashboards",
        organisations.CUSTOMER_DASHBOARDS_IN_CONTAINER: organisations.CUSTOMER_DASHBOARDS,
    }
    by_org = {o.org_id: o for o in organisations.organisations()}
    end = db.client().query("SELECT max(ts) FROM sanlens.metrics").result_rows[0][0].replace(tzinfo=UTC)
    refused, ran = [], 0
    for provider in yaml.safe_load(organisations.PROVIDERS.read_text())["providers"]:
        role = by_org[provider["orgId"]].role
        roles.password(role)
        client = db.client(user=role)
        for name, sql in dashboard_queries(end, timedelta(hours=1), folders[provider["options"]["path"]]):
            try:
                client.query(sql)
                ran += 1
            except DatabaseError as exc:
                refused.append(f"{role}: {name}: {str(exc).splitlines()[0][:300]}")
    assert not refused, "\n".join(refused)
    assert ran > 3 * 30, ran  # the main organisation and two customers', every dashboard's queries
