"""The Grafana dashboard shipped in docs/grafana/ reads only metric families that exist."""

from __future__ import annotations

import json
import re
from pathlib import Path

from prometheus_client.parser import text_string_to_metric_families

from ironic_fsm import Conductor
from ironic_fsm.metrics import Metrics

DASHBOARD = Path(__file__).resolve().parents[2] / "docs" / "grafana" / "ironic-fsm.json"


def test_every_panel_queries_families_the_metrics_export() -> None:
    exported: set[str] = set()
    metrics = Metrics(Conductor())
    for family in text_string_to_metric_families(metrics.exposition()[0].decode()):
        exported |= {sample.name for sample in family.samples} | {family.name}
        if family.type == "counter":  # an empty one exposes no sample yet
            exported.add(f"{family.name}_total")
    exported.add("ironic_fsm_api_request_duration_seconds_bucket")  # no request served here
    exported.add("ironic_fsm_api_request_duration_seconds_count")
    for name in ("ironic_fsm_flow_duration_seconds", "ironic_fsm_step_duration_seconds",
                 "ironic_fsm_driver_call_duration_seconds"):  # fmt: skip
        exported.add(f"{name}_bucket")  # empty histograms expose no bucket yet
    dashboard = json.loads(DASHBOARD.read_text(encoding="utf-8"))
    queried = {
        name
        for panel in dashboard["panels"]
        for target in panel["targets"]
        for name in re.findall(r"\bironic_fsm_[a-z_]+", target["expr"])
    }
    assert queried, "the dashboard queries nothing"
    assert queried <= exported, sorted(queried - exported)
