"""A raw-SQL query of the Grafana ClickHouse data source plugin (grafana-clickhouse-datasource), as a
grafana-foundation-sdk data query: the SDK ships no ClickHouse query type of its own."""

from __future__ import annotations

from grafana_foundation_sdk.builders import dashboard
from grafana_foundation_sdk.cog import builder, variants
from grafana_foundation_sdk.models.dashboard import DataSourceRef, VariableOption, VariableRefresh, VariableSort

PLUGIN = "grafana-clickhouse-datasource"
# The provisioned data source (grafana/provisioning/datasources/clickhouse.yaml): what the alert rules read, and the
# default of every dashboard's data source variable, which a Grafana the dashboards are imported into sets to its own
# ClickHouse data source (grafana/README.md, "Your own Grafana").
DATASOURCE_NAME, DATASOURCE_UID = "ClickHouse", "sanlens-clickhouse"
DATASOURCE_VARIABLE = "datasource"
DATASOURCE = DataSourceRef(type_val=PLUGIN, uid=f"${{{DATASOURCE_VARIABLE}}}")
# The plugin's result formats (its Format enum): time series frames or a table.
TIME_SERIES, TABLE = 0, 1


class ClickHouseSQL(variants.Dataquery):
    def __init__(self, sql: str, fmt: int, ref_id: str = "A") -> None:
        self.sql, self.fmt, self.ref_id = sql, fmt, ref_id

    def to_json(self) -> dict[str, object]:
        return {
            "refId": self.ref_id,
            "datasource": DATASOURCE.to_json(),
            "editorType": "sql",
            "format": self.fmt,
            "queryType": "timeseries" if self.fmt == TIME_SERIES else "table",
            "rawSql": self.sql.strip(),
        }


class Query(builder.Builder[ClickHouseSQL]):
    def __init__(self, sql: str, fmt: int = TABLE, ref_id: str = "A") -> None:
        self._query = ClickHouseSQL(sql, fmt, ref_id)

    def build(self) -> ClickHouseSQL:
        return self._query


def datasource_variable():
    """The dashboard's ClickHouse data source: any of the plugin's, the provisioned one by default."""
    return (
        dashboard.DatasourceVariable(DATASOURCE_VARIABLE)
        .label("ClickHouse")
        .type(PLUGIN)
        .current(VariableOption(selected=True, text=DATASOURCE_NAME, value=DATASOURCE_UID))
    )


def cascading_variable(name: str, label: str, parents: list[str], table: str, time_column: str, where: str = ""):
    """A multi-select variable (with All) listing the column `name` of `table` in the time range, filtered by the
    variables it depends on (`parents`), sorted."""
    conditions = "".join(f"\n    AND $__conditionalAll({p} IN (${{{p}:singlequote}}), ${p})" for p in parents)
    sql = (
        f"SELECT DISTINCT {name} FROM {table}\n"
        f"WHERE $__timeFilter({time_column}){where} AND {name} != ''{conditions}\nORDER BY {name}"
    )
    return (
        dashboard.QueryVariable(name)
        .label(label)
        .datasource(DATASOURCE)
        .query(sql)
        .refresh(VariableRefresh.ON_TIME_RANGE_CHANGED)
        .sort(VariableSort.ALPHABETICAL_ASC)
        .multi(True)
        .include_all(True)
    )
