"""SQL that more than one view runs (the command line, the report, the Grafana dashboards): one text per fact,
so that every view of it shows the same number."""
