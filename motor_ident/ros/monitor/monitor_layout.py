"""The Foxglove layout of a scenario's run, built with foxglove-sdk's typed layouts (``foxglove.layouts``).

    python -m motor_ident.ros.monitor.monitor_layout valkyrie_arm > config/foxglove/valkyrie_arm.json

Panels: measured vs predicted torque per joint (``/joint_states.effort[i]`` and the identifier's
``/identifier/predicted_effort.effort[i]``), R^2 per joint with the gate threshold, the gate state,
the tracking error per joint, /diagnostics, and the robot in 3D (its URDF from
``/robot_description``, posed from ``/joint_states``). Indices follow the robot config's joint
order, which is the order sim_robot publishes by default (a robot publishing another order needs
the indices changed). tests/ros/test_monitoring_configs.py resolves every path in a live run.
"""

from __future__ import annotations

import json
import sys

import foxglove.layouts as fl

from motor_ident.io.robot_config import load_robot_config
from motor_ident.scenario.loader import load_scenario
from motor_ident.schema import flatten

COLOURS = ("#4e98e2", "#f5774d", "#61cbb4", "#f7df71", "#c77dff", "#9ccc65", "#ef5350")


def scenario_layout(scenario: str) -> fl.Layout:
    """The layout of ``scenario``'s run: its robot's joints and its identifier's R^2 threshold."""
    loaded = load_scenario(scenario)
    joints = load_robot_config(loaded.nodes["sim_robot"].robot).joints
    threshold = float(flatten(loaded.nodes["identifier"])["r2_threshold"])
    torque = [
        fl.SplitItem(
            content=fl.PlotPanel(
                title=f"{joint}: measured vs predicted torque [N m]",
                config=fl.PlotConfig(
                    paths=[
                        fl.PlotSeries(value=f"/joint_states.effort[{i}]", label="measured", color=COLOURS[0]),
                        fl.PlotSeries(
                            value=f"/identifier/predicted_effort.effort[{i}]", label="predicted", color=COLOURS[1]
                        ),
                    ],
                    time_window_mode="sliding",
                    following_view_width=10.0,
                ),
            )
        )
        for i, joint in enumerate(joints)
    ]
    r2 = fl.PlotPanel(
        title=f"R2 per joint on the identifier's window (gate opens at {threshold:g})",
        config=fl.PlotConfig(
            paths=[
                fl.PlotSeries(value=f"/identifier/r2.data[{i}]", label=joint, color=COLOURS[i % len(COLOURS)])
                for i, joint in enumerate(joints)
            ],
            min_y_value=threshold - 0.1,
            max_y_value=1.0,
            y_axis_label=f"R2 (threshold {threshold:g})",
        ),
    )
    gate = fl.StateTransitionsPanel(
        title="identifier gate",
        config=fl.StateTransitionsConfig(paths=[fl.StateTransitionsSeries(value="/identifier/gate_open.data")]),
    )
    tracking = fl.PlotPanel(
        title="tracking error [rad]",
        config=fl.PlotConfig(
            paths=[
                fl.PlotSeries(
                    value=f"/feedforward/tracking_error.data[{i}]", label=joint, color=COLOURS[i % len(COLOURS)]
                )
                for i, joint in enumerate(joints)
            ]
        ),
    )
    robot = fl.ThreeDeePanel(
        title="robot (URDF from /robot_description, posed by /joint_states)",
        config=fl.ThreeDeeConfig(
            layers={
                "robot": fl.BaseRendererUrdfLayerSettings(
                    layer_id="foxglove.Urdf",
                    label="robot",
                    source_type="topic",
                    topic="/robot_description",
                    control_mode="jointStates",
                    joint_states_topic="/joint_states",
                    show_axis=True,
                )
            },
        ),
    )
    diagnostics = fl.DiagnosticsSummaryPanel(title="/diagnostics")

    def column(*panels: fl.BasePanel) -> fl.SplitContainer:
        return fl.SplitContainer(direction="column", items=[fl.SplitItem(content=p) for p in panels])

    return fl.Layout(
        content=fl.SplitContainer(
            direction="row",
            items=[
                fl.SplitItem(proportion=2, content=fl.SplitContainer(direction="column", items=torque)),
                fl.SplitItem(proportion=2, content=column(r2, gate, tracking)),
                fl.SplitItem(proportion=1, content=column(robot, diagnostics)),
            ],
        )
    )


if __name__ == "__main__":
    layout = scenario_layout(sys.argv[1] if len(sys.argv) > 1 else "valkyrie_arm")
    sys.stdout.write(json.dumps(json.loads(layout.to_json()), indent=1) + "\n")
