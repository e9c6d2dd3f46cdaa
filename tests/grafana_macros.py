"""What Grafana and its ClickHouse data source plugin do to a panel's SQL before ClickHouse sees it,
for the tests that run every panel's query (the plugin's own code is Go and TypeScript, not importable
here). Implemented from the plugin's documentation and pkg/macros/macros.go:

    $__timeFilter(c)      c >= toDateTime(FROM) AND c <= toDateTime(TO)            (Unix seconds)
    $__timeFilter_ms(c)   c >= fromUnixTimestamp64Milli(FROM_MS) AND c <= ...(TO_MS)
    $__dateFilter(c)      c >= toDate('YYYY-MM-DD') AND c <= toDate('YYYY-MM-DD')
    $__fromTime / $__toTime, $__fromTime_ms / $__toTime_ms
    $__timeInterval(c)    toStartOfInterval(toDateTime(c), INTERVAL N second)     N = max(interval, 1)
    $__interval_s         N
    $__conditionalAll(condition, $var)   1=1 when $var selects All, else condition  (the frontend's)

and Grafana's template variables: ${var:singlequote} -> 'a','b'; ${var:queryparam} -> var-var=a;
${var} and $var -> a,b.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime

ALL = object()  # a variable's value when "All" is selected


def _args(sql: str, start: int) -> tuple[list[str], int]:
    """The comma-separated arguments of the call whose '(' is at sql[start], and the index after ')'."""
    depth, args, current = 0, [], ""
    for i in range(start, len(sql)):
        ch = sql[i]
        if ch == "(":
            depth += 1
            if depth == 1:
                continue
        elif ch == ")":
            depth -= 1
            if depth == 0:
                args.append(current.strip())
                return args, i + 1
        elif ch == "," and depth == 1:
            args.append(current.strip())
            current = ""
            continue
        current += ch
    raise ValueError(f"unbalanced parentheses in: {sql[start : start + 80]}")


def _replace_calls(sql: str, name: str, render) -> str:
    pattern = re.compile(r"\$__" + re.escape(name) + r"(?=\()")
    while m := pattern.search(sql):
        args, end = _args(sql, m.end())
        sql = sql[: m.start()] + render(args) + sql[end:]
    return sql


def expand(sql: str, start: datetime, end: datetime, interval_s: int, variables: dict[str, object]) -> str:
    """The SQL ClickHouse receives for a time range, a $__interval and variable values (lists, or ALL)."""
    frm, to = (
        int(start.replace(tzinfo=start.tzinfo or UTC).timestamp()),
        int(end.replace(tzinfo=end.tzinfo or UTC).timestamp()),
    )

    def selected_all(ref: str) -> bool:
        name = ref.strip().lstrip("$").strip("{}").split(":")[0]
        return variables[name] is ALL

    sql = _replace_calls(sql, "conditionalAll", lambda a: "1=1" if selected_all(a[1]) else a[0])
    sql = _replace_calls(sql, "timeFilter", lambda a: f"{a[0]} >= toDateTime({frm}) AND {a[0]} <= toDateTime({to})")
    sql = _replace_calls(
        sql,
        "timeFilter_ms",
        lambda a: (
            f"{a[0]} >= fromUnixTimestamp64Milli({frm * 1000}) AND {a[0]} <= fromUnixTimestamp64Milli({to * 1000})"
        ),
    )
    day = lambda t: datetime.fromtimestamp(t, UTC).strftime("%Y-%m-%d")  # noqa: E731
    sql = _replace_calls(
        sql, "dateFilter", lambda a: f"{a[0]} >= toDate('{day(frm)}') AND {a[0]} <= toDate('{day(to)}')"
    )
    n = max(int(interval_s), 1)
    sql = _replace_calls(sql, "timeInterval", lambda a: f"toStartOfInterval(toDateTime({a[0]}), INTERVAL {n} second)")
    for macro, value in (
        ("fromTime_ms", f"fromUnixTimestamp64Milli({frm * 1000})"),
        ("toTime_ms", f"fromUnixTimestamp64Milli({to * 1000})"),
        ("fromTime", f"toDateTime({frm})"),
        ("toTime", f"toDateTime({to})"),
        ("interval_s", str(n)),
    ):
        sql = sql.replace(f"$__{macro}", value)

    def value(m: re.Match) -> str:
        name, fmt = m.group(1) or m.group(3), m.group(2)
        if name not in variables:
            raise KeyError(f"the query uses ${name}, which the dashboard does not define")
        values = variables[name]
        if values is ALL:
            raise ValueError(f"${name} is All outside $__conditionalAll: it would expand to every value")
        values = [values] if isinstance(values, str) else list(values)
        if fmt == "singlequote":
            return ",".join("'" + v.replace("'", "\\'") + "'" for v in values)
        if fmt == "queryparam":
            return "&".join(f"var-{name}={v}" for v in values)
        return ",".join(values)

    sql = re.sub(r"\$\{(\w+)(?::(\w+))?\}|\$(?!__)(\w+)", value, sql)
    if "$__" in sql:
        raise ValueError(f"a macro was left unexpanded: {sql[sql.index('$__') :][:60]}")
    return sql
