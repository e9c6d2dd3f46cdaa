"""Telegraf poller configs for arrays and switches: one inputs.http per array API and per switch,
parsed with json_v2 into the measurements the normalise job knows (flink-jobs/normalize/catalog.yaml).

The sample config in ingest/telegraf/poller/telegraf.conf is rendered from here (tests keep the two in
step); the local stack renders one for the simulated fleet into .sanlens/run/telegraf.d/.
"""
from __future__ import annotations

# Array REST API path (under the array's base URL) -> (measurement, keys of each member that become tags).
ARRAY_APIS = {
    "api/v1/systemreporter/attime/vlunstatistics/hires": ("array_vlun", ["volumeName", "hostname", "hostWWN"]),
    "api/v1/systemreporter/attime/vvhistograms/hires": ("array_vv_histogram", ["volumeName"]),
    "api/v1/systemreporter/attime/vvtiers/hires": ("array_vv_tier", ["volumeName"]),
}
HYBRID_ONLY = {"api/v1/systemreporter/attime/vvtiers/hires"}
SWITCH_API = "rest/running/brocade-interface/fibrechannel-statistics"
SWITCH_MEASUREMENT = "brocade_fc_port"


def _tags(**tags: str) -> str:
    return "".join(f'    {k} = "{v}"\n' for k, v in tags.items())


def array_block(name: str, site: str, base_url: str, interval: str, hybrid: bool) -> str:
    blocks = []
    for path, (measurement, tag_keys) in ARRAY_APIS.items():
        if path in HYBRID_ONLY and not hybrid:
            continue
        blocks.append(f"""[[inputs.http]]
  alias = "{name}-{measurement}"
  urls = ["{base_url}/{path}"]
  interval = "{interval}"
  timeout = "5s"
  data_format = "json_v2"
  [inputs.http.tags]
{_tags(array=name, site=site, source=name)}  [[inputs.http.json_v2]]
    measurement_name = "{measurement}"
    timestamp_path = "sampleTimeSec"
    timestamp_format = "unix"
    [[inputs.http.json_v2.object]]
      path = "members"
      tags = {tag_keys!r}
""".replace("'", '"'))
    return "\n".join(blocks)


def switch_block(name: str, site: str, base_url: str, interval: str) -> str:
    return f"""[[inputs.http]]
  alias = "{name}-{SWITCH_MEASUREMENT}"
  urls = ["{base_url}/{SWITCH_API}"]
  interval = "{interval}"
  timeout = "5s"
  headers = {{"Accept" = "application/yang-data+json"}}
  data_format = "json_v2"
  [inputs.http.tags]
{_tags(switch=name, site=site, source=name)}  [[inputs.http.json_v2]]
    measurement_name = "{SWITCH_MEASUREMENT}"
    timestamp_path = "sample-time"
    timestamp_format = "unix"
    [[inputs.http.json_v2.object]]
      path = "Response.fibrechannel-statistics"
      tags = ["name"]
"""


# The sample config (poller/telegraf.conf) is this example rendered between its header and its output.
EXAMPLE = {"arrays": [("array01", "${SANLENS_SITE}", False), ("array02", "${SANLENS_SITE}", True)],
           "switches": [("fabric-a-sw1", "${SANLENS_SITE}")], "base_url": "https://${SANLENS_API_GATEWAY}",
           "interval": "5m"}


def render(arrays: list[tuple[str, str, bool]], switches: list[tuple[str, str]], base_url: str, interval: str) -> str:
    """Poller blocks for (name, site, hybrid) arrays at {base_url}/arrays/{name} and (name, site) switches
    at {base_url}/switches/{name}."""
    parts = [array_block(n, site, f"{base_url}/arrays/{n}", interval, hybrid) for n, site, hybrid in arrays]
    parts += [switch_block(n, site, f"{base_url}/switches/{n}", interval) for n, site in switches]
    return "\n".join(parts)
