"""``identifier``: sliding-buffer online identification with an R^2 gate (Kolathaya et al. 2016, section VI).

Subscribes ``joint_states``, and what its torque source needs (``torque_source``, default the robot
config's; `motor_ident.ros.nodes.torque_inputs`): ``motor_states`` (currents or duty cycles) or
``ft_sensor/wrench``, paired with the joint states by stamp (currents times the drive gains of
``drive_gains_file``, a parameter file ``identify --payload-data`` wrote, else the robot config's); feeds
`motor_ident.core.estimation.online.OnlineIdentifier` (the same regressor, base parameters and least
squares as ``motor-ident identify``). A secondary topic silent for ``secondary_timeout`` closes the
gate, with the topic named in /diagnostics. Publishes:

- ``~/parameters``: the current window estimate of the base parameters (Float64MultiArray; the
  names, in order, are the read-only parameter ``parameter_names``);
- ``~/active_parameters``: the base parameters of the model in use — identified while the gate
  is open (their physically consistent projection), nominal otherwise (latched);
- ``~/active_full_parameters``: the same model as full parameters (regressor order, physically
  valid when the gate checked it; latched): the feedforward node runs RNEA on it;
- ``~/predicted_effort``: torque predicted by the active model for the latest sample, beside the
  measurement for rqt_plot; ``~/r2``: R^2 per joint on the window; ``~/gate_open``;
- ``/diagnostics``: R^2 per joint, condition number, physical consistency, buffer fill, gate
  state and why (the first condition that failed), active model, dropped samples per reason, and
  a WARN naming them when more than one node publishes ``joint_states``.

A malformed state (a missing joint, NaN, mismatched arrays) or one whose stamp does not continue
the robot's clock (a second publisher stamping 0, a duplicate) is dropped and counted
(`motor_ident.ros.wire.conversions`); the buffer is emptied only when ``clock_restart_samples``
states in a row agree on a new clock (bag loop, simulator reset).

Services: ``~/reset`` (empty the buffer), ``~/save`` (write the estimate to ``parameters_file``
atomically), ``~/use_nominal`` (SetBool: force the nominal model). A parameter file saved earlier
is loaded at start and becomes the nominal model; a corrupt one is moved aside and reported.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

import numpy as np
from diagnostic_msgs.msg import DiagnosticArray
from sensor_msgs.msg import JointState
from std_msgs.msg import Bool, Float64MultiArray
from std_srvs.srv import SetBool, Trigger

from motor_ident.core.estimation.heldout_gate import describe_gate
from motor_ident.errors import ConfigError
from motor_ident.io.params import ParameterSet, load_drive_gains, load_parameters, save_parameters
from motor_ident.ros.nodes.torque_inputs import TorqueInputs
from motor_ident.ros.runtime.common import (
    IDENTIFIER_STATE_QOS,
    LATCHED_QOS,
    ClockWatch,
    declare,
    load_robot,
    run_node,
    steady_timer,
)
from motor_ident.ros.runtime.lifecycle import ManagedNode
from motor_ident.ros.wire.conversions import (
    ERROR,
    OK,
    WARN,
    DropCounter,
    JointIndex,
    Reason,
    joint_state_arrays,
    make_array,
    make_joint_state,
    make_status,
    publisher_warning,
    stamp_order,
    stamp_to_seconds,
)
from motor_ident.scenario.build import build_identifier
from motor_ident.scenario.nodes import IdentifierSettings


class IdentifierNode(ManagedNode):
    """Adapter between `OnlineIdentifier` and ROS (a managed node: `motor_ident.ros.runtime.lifecycle`)."""

    def __init__(self, **kwargs: object) -> None:
        super().__init__("identifier", settings=IdentifierSettings, **kwargs)

    def build(self) -> None:
        """Configure: robot, regressor, estimator (the SDP compiled here), publishers, services."""
        self.settings = self.declared(IdentifierSettings, self._apply)
        self.config = load_robot(self.settings.robot)
        if self.settings.drive_gains_file:
            self.config = self.config.with_drive_gains(load_drive_gains(self.settings.drive_gains_file))
        settings = self.settings.core
        gate = settings.gate
        self.parameters_file = self.settings.parameters_file
        self.core = build_identifier(self.settings, self.config)
        self.regressor, self.base = self.core.regressor, self.core.base
        self.names = self.base.expressions()
        if not self.has_parameter("parameter_names"):  # declared at the first configure
            declare(self, "parameter_names", self.names, "names of ~/parameters, in order", read_only=True)
        self.index = JointIndex(self.config.joints)
        self.stamps = stamp_order(self.settings.stamps)
        self.drops = DropCounter("joint_states sample", self.get_logger())
        self.nominal_source = "robot config"
        self._load_saved()
        if gate.require_consistent:
            self.core.prepare_consistency_check()  # cvxpy import and SDP compilation: not mid-stream

        self.param_pub = self.create_publisher(Float64MultiArray, "~/parameters", 10)
        self.active_pub = self.create_publisher(Float64MultiArray, "~/active_parameters", LATCHED_QOS)
        self.active_full_pub = self.create_publisher(Float64MultiArray, "~/active_full_parameters", LATCHED_QOS)
        self.predicted_pub = self.create_publisher(JointState, "~/predicted_effort", 10)
        self.r2_pub = self.create_publisher(Float64MultiArray, "~/r2", 10)
        self.gate_pub = self.create_publisher(Bool, "~/gate_open", LATCHED_QOS)
        self.diag_pub = self.create_publisher(DiagnosticArray, "/diagnostics", 10)
        self._stale = ""
        self.create_service(Trigger, "~/reset", self._on_reset)
        self.create_service(Trigger, "~/save", self._on_save)
        self.create_service(SetBool, "~/use_nominal", self._on_use_nominal)
        steady_timer(self, self.settings.diagnostics_period, self._publish_diagnostics)  # on in a stopped /clock too
        self._last_gate: bool | None = None
        self.clock = ClockWatch(self)
        self._last_fit: object = None  # the fit last published
        self.gate_history: list[tuple[float, bool]] = []
        self.get_logger().info(
            f"identifying {len(self.names)} base parameters of {self.config.name}; window "
            f"{settings.window_duration:g} s of samples at about {settings.sample_rate:g} Hz, "
            f"gate: {describe_gate(gate, settings.improvement)}"
        )
        self._counts_logged = False

    def start_commanding(self) -> None:
        """Activate: the nominal model goes out (latched), then the joint states and the torque source are read."""
        self._publish_active()
        self.state_sub = self.create_subscription(JointState, "joint_states", self._on_state, IDENTIFIER_STATE_QOS)
        self.inputs = TorqueInputs(self, self.config, self.settings, self.regressor.robot, self._add_sample, self.drops)

    def safe_output(self) -> None:
        """Deactivate: the buffer emptied and the nominal model active (gate closed), published once."""
        self.core.reset()
        self._publish_active()

    @property
    def rejected(self) -> int:
        """joint_states messages dropped so far (every reason)."""
        return self.drops.total

    @property
    def last_reject_reason(self) -> str:
        """Why the latest dropped message was dropped ("" before any)."""
        return self.drops.last

    # -- data path -------------------------------------------------------------------------------
    def _on_state(self, msg: JointState) -> None:
        arrays, reason = joint_state_arrays(msg, self.index, self.inputs.state_fields)
        if not arrays:
            self.drops.add(reason)
            return
        t = stamp_to_seconds(msg.header.stamp)
        previous = self.stamps.last
        reason = self.stamps.accept(t)
        if reason:
            self.drops.add(reason)
            return
        if self.stamps.restarted and previous is not None:
            self._restart(previous, t)
        self.inputs.on_joint_state(t, arrays)  # joint_effort: at once; else once paired with its measurement

    def _add_sample(self, t: float, q: np.ndarray, qd: np.ndarray, tau: np.ndarray) -> None:
        """A sample with its joint torques (from the torque source) for the estimator."""
        if not self.core.add_sample(t, q, qd, tau):  # unreachable for checked samples; counted if not
            self.drops.add(Reason(f"sample at {t:.3f} s refused by the estimator", "refused by the estimator"))
            return
        if not self._counts_logged and self.core.counts is not None:
            self._counts_logged = True
            self.get_logger().info(self.core.counts.describe())
        fit = self.core.fit
        if fit is not None and fit is not self._last_fit:
            self._last_fit = fit
            self._on_refit(t)

    def _restart(self, previous: float, t: float) -> None:
        """The clock restarted (bag loop, simulator reset): empty the buffer, nominal model."""
        self.core.reset()
        self.core.last_time = None  # the new clock's first sample starts the filters again
        self.inputs.reset()
        self._publish_active()
        self.get_logger().warning(
            f"clock restarted: {self.stamps.confirm} states in a row went from {previous:.3f} to {t:.3f} s; "
            "buffer emptied, nominal model active",
            throttle_duration_sec=2.0,
        )

    def _on_refit(self, t: float) -> None:
        fit = self.core.fit
        assert fit is not None
        self.param_pub.publish(make_array(fit.theta, "base_parameters"))
        self.r2_pub.publish(make_array(fit.r2_of(self.core.config.gate.r2_definition)))
        changed = self.core.gate_open != self._last_gate  # before _publish_active records the new state
        if self.core.gate_open or self._last_gate:
            self._publish_active()
        Y, _ = self.core.window.latest()
        self.predicted_pub.publish(make_joint_state(self.config.joints, t, effort=Y @ self.core.active_theta))
        if changed:
            self.gate_history.append((t, self.core.gate_open))
            self.get_logger().info(f"t = {t:.2f} s: {self.core.gate.reason}")

    def _publish_active(self) -> None:
        self.active_pub.publish(make_array(self.core.active_theta, "base_parameters"))
        self.active_full_pub.publish(make_array(self.core.active_theta_full, "full_parameters"))
        self.gate_pub.publish(Bool(data=self.core.gate_open))
        self._last_gate = self.core.gate_open

    # -- persistence -----------------------------------------------------------------------------
    def _load_saved(self) -> None:
        if not self.parameters_file or not Path(self.parameters_file).exists():
            return
        try:
            saved = load_parameters(self.parameters_file, expected_names=self.regressor.names)
        except ConfigError as exc:
            aside = f"{self.parameters_file}.bad-{int(time.time())}"
            os.replace(self.parameters_file, aside)
            self.get_logger().error(f"{exc}; using the nominal model, the bad file is kept as {aside}")
            self.nominal_source = f"robot config (saved file rejected, kept as {aside})"
            return
        self.core.set_nominal(self.base.to_base(saved.values))
        self.nominal_source = f"saved parameters {self.parameters_file}"
        self.get_logger().info(f"nominal model loaded from {self.parameters_file}")

    def _on_save(self, request: Trigger.Request, response: Trigger.Response) -> Trigger.Response:
        fit = self.core.fit
        if not self.parameters_file:
            response.success, response.message = False, "parameter parameters_file is empty: nowhere to save"
        elif fit is None:
            response.success, response.message = False, "no estimate yet"
        else:
            theta = self.base.to_full(fit.theta, self.base.to_full(self.core.theta_nominal))
            save_parameters(
                self.parameters_file,
                ParameterSet(
                    names=self.regressor.names,
                    values=theta,
                    robot=self.config.name,
                    method="sliding_window",
                    extra={
                        "metrics": {
                            "r2_per_joint": [float(x) for x in fit.r2],
                            "condition_number": fit.condition_number,
                        }
                    },
                ),
            )
            response.success, response.message = True, f"saved to {self.parameters_file}"
        return response

    # -- services --------------------------------------------------------------------------------
    def _on_reset(self, request: Trigger.Request, response: Trigger.Response) -> Trigger.Response:
        self.core.reset()
        self._publish_active()
        response.success, response.message = True, "buffer emptied, nominal model active"
        return response

    def _apply(self, settings: IdentifierSettings) -> None:
        """Live settings (the gate's) changed: the next refit uses them."""
        if settings.core.gate.require_consistent and not self.settings.core.gate.require_consistent:
            self.core.prepare_consistency_check()
        self.settings = settings
        self.core.set_gate(settings.core.gate, settings.core.improvement)
        self.get_logger().info(f"gate settings now {settings.core.gate}, {settings.core.improvement}")

    def _on_use_nominal(self, request: SetBool.Request, response: SetBool.Response) -> SetBool.Response:
        self.core.gate.forced_nominal = bool(request.data)
        self.core.refit()
        self._publish_active()
        response.success = True
        response.message = "nominal model forced" if request.data else "gate decides again"
        return response

    # -- diagnostics -----------------------------------------------------------------------------
    def _publish_diagnostics(self) -> None:
        fit, core = self.core.fit, self.core
        values: dict[str, object] = {
            "gate": "open" if core.gate_open else "closed",
            "reason": core.gate.reason,
            "active_model": "identified" if core.gate_open else f"nominal ({self.nominal_source})",
            "buffer_fill": f"{core.window.count}/{core.window.window}",
            "stream": "measuring its rate" if core.counts is None else core.counts.describe(),
            "samples_used": core.samples_used,
            "equations_near_rest_per_joint": core.samples_near_rest.tolist(),  # left out by min_velocity
            **self.drops.diagnostic_values(),
            "buffer_resets": core.resets,
        }
        if fit is not None:
            values.update(
                {
                    "r2_per_joint": list(fit.r2),
                    "r2_uncentred_per_joint": list(fit.r2_uncentred),
                    "rmse_per_joint": list(fit.rmse),
                    "condition_number": fit.condition_number,
                }
            )
        values["gate_criterion"] = core.config.improvement.gate_criterion
        evidence = getattr(core.gate, "evidence", None)  # the improvement gate's held-out errors
        if evidence is not None:
            values["heldout_rmse_per_joint"] = evidence.rmse_identified.tolist()
            values["heldout_nominal_rmse_per_joint"] = evidence.rmse_nominal.tolist()
        verdict = core.gate.consistency
        if verdict is not None:
            values.update(
                {
                    "physically_consistent": verdict.consistent,
                    "consistency": verdict.reason,
                    "consistency_chi2": verdict.chi2,
                    "consistency_check_ms": 1e3 * verdict.seconds,
                }
            )
        level = OK if core.gate_open else WARN
        if fit is not None and not np.all(np.isfinite(fit.theta)):
            level = ERROR
        message = core.gate.reason
        if not self.commanding:
            level, message = WARN, "inactive: nominal model active"
        else:
            values.update(self.inputs.diagnostic_values())
            stale = self.inputs.stale()
            if stale and not self._stale:  # a torque measurement stopped: nothing to identify from
                core.reset()
                self._publish_active()
            self._stale = stale
            if stale:
                values["gate"], values["reason"] = "closed", f"{stale}: gate closed"
                level, message = max(level, WARN), f"{stale}: gate closed, nominal model active"
            clock = self.clock.why(self.settings.diagnostics_period)
            if clock:  # the simulator or bag player stopped: no new samples, the model stays as it is
                level, message = max(level, WARN), f"{clock}: no new samples; {message}"
            values["joint_states_publishers"], crowded = publisher_warning(self, self.state_sub.topic_name)
            if crowded:
                level, message = max(level, WARN), f"{crowded}; {message}"
        msg = DiagnosticArray()
        msg.header.stamp = self.get_clock().now().to_msg()
        msg.status = [make_status("motor_ident: identifier", self.config.name, level, message, values)]
        self.diag_pub.publish(msg)


def main(args: list[str] | None = None) -> None:
    """``ros2 run motor_ident identifier``."""
    run_node(IdentifierNode, args)


if __name__ == "__main__":
    main()
