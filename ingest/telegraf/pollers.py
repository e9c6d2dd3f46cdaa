"""Telegraf poller configs for arrays and switches: one inputs.http per array API and per switch,
parsed with json_v2 into the measurements the normalize job knows (flink-jobs/normalize/catalog.yaml).

The sample config in ingest/telegraf/poller/telegraf.conf is rendered from here (tests keep the two in
step); the local stack renders one for the simulated fleet into .sanlens/run/telegraf.d/.
"""

from __future__ import annotations

# Array REST API path (under the array's base URL) -> (measurement, keys of each member that become tags).
ARRAY_APIS = {
    "api/v1/systemreporter/attime/vlunstatistics/hires": ("array_vlun", ["volumeName", "hostname", "hostWWN"]),
    "api/v1/systemreporter/attime/vvhistograms/hires": ("array_vv_histogram", ["volumeName"]),
    "api/v1/systemreporter/attime/vvtiers/hires": ("array_vv_tier", ["volumeName"]),
    "api/v1/capacity": ("array_capacity", []),
}
HYBRID_ONLY = {"api/v1/systemreporter/attime/vvtiers/hires", "api/v1/capacity"}
# APIs whose document is one object, not a list of members: json_v2 reads it whole, without its sample time
WHOLE_DOCUMENTS = {"api/v1/capacity"}
SAMPLE_TIME_KEYS = ["sampleTime", "sampleTimeSec"]

SWITCH_API = "rest/running/brocade-interface/fibrechannel-statistics"
SWITCH_MEASUREMENT = "brocade_fc_port"


def metric_objects(path: str, document: dict) -> list[dict]:
    """The objects of an array's document that become metrics, as the poller's json_v2 reads them."""
    if path in WHOLE_DOCUMENTS:
        return [{k: v for k, v in document.items() if k not in SAMPLE_TIME_KEYS}]
    return document["members"]


def _http_block(
    alias: str,
    url: str,
    interval: str,
    tags: dict,
    measurement: str,
    timestamp_path: str,
    members: str,
    tag_keys: list[str],
    headers: str = "",
    excluded_keys: list[str] = (),
) -> str:
    """One inputs.http whose json_v2 turns each member of the document into a metric, timed by the
    document's own sample time."""
    tag_lines = "".join(f'    {k} = "{v}"\n' for k, v in tags.items())
    header_line = f"  headers = {{{headers}}}\n" if headers else ""
    keys = ", ".join(f'"{k}"' for k in tag_keys)
    excluded = ", ".join(f'"{k}"' for k in excluded_keys)
    excluded_line = f"      excluded_keys = [{excluded}]\n" if excluded_keys else ""
    return f"""[[inputs.http]]
  alias = "{alias}"
  urls = ["{url}"]
  interval = "{interval}"
  timeout = "5s"
{header_line}  data_format = "json_v2"
  [inputs.http.tags]
{tag_lines}  [[inputs.http.json_v2]]
    measurement_name = "{measurement}"
    timestamp_path = "{timestamp_path}"
    timestamp_format = "unix"
    [[inputs.http.json_v2.object]]
      path = "{members}"
      tags = [{keys}]
{excluded_line}"""


def array_block(name: str, site: str, base_url: str, interval: str, hybrid: bool) -> str:
    return "\n".join(
        _http_block(
            f"{name}-{measurement}",
            f"{base_url}/{path}",
            interval,
            {"array": name, "site": site, "source": name},
            measurement,
            "sampleTimeSec",
            "@this" if path in WHOLE_DOCUMENTS else "members",
            tag_keys,
            excluded_keys=SAMPLE_TIME_KEYS if path in WHOLE_DOCUMENTS else (),
        )
        for path, (measurement, tag_keys) in ARRAY_APIS.items()
        if hybrid or path not in HYBRID_ONLY
    )


def switch_block(name: str, site: str, base_url: str, interval: str) -> str:
    return _http_block(
        f"{name}-{SWITCH_MEASUREMENT}",
        f"{base_url}/{SWITCH_API}",
        interval,
        {"switch": name, "site": site, "source": name},
        SWITCH_MEASUREMENT,
        "sample-time",
        "Response.fibrechannel-statistics",
        ["name"],
        headers='"Accept" = "application/yang-data+json"',
    )


# The sample config (poller/telegraf.conf) is this example rendered between its header and its output.
EXAMPLE = {
    "arrays": [("array01", "${SANLENS_SITE}", False), ("array02", "${SANLENS_SITE}", True)],
    "switches": [("fabric-a-sw1", "${SANLENS_SITE}")],
    "base_url": "https://${SANLENS_API_GATEWAY}",
    "interval": "5m",
}


def render(arrays: list[tuple[str, str, bool]], switches: list[tuple[str, str]], base_url: str, interval: str) -> str:
    """Poller blocks for (name, site, hybrid) arrays at {base_url}/arrays/{name} and (name, site) switches
    at {base_url}/switches/{name}."""
    parts = [array_block(n, site, f"{base_url}/arrays/{n}", interval, hybrid) for n, site, hybrid in arrays]
    parts += [switch_block(n, site, f"{base_url}/switches/{n}", interval) for n, site in switches]
    return "\n".join(parts)
