"""Xin et al. 2020's test bench: Table 1 parameters and the PI gains of Tables 2 and 4."""

from __future__ import annotations

from motor_ident.core.elastic.two_inertia import TwoInertiaParameters, motor_inertia_for_resonance

# Xin et al. 2020, Table 1 (and text: 0.17 N m/A, 10 A saturation, N = 160, 1 kHz).
XIN_LOAD_INERTIA = 2.26
XIN_LOAD_DAMPING = 5.0
XIN_STIFFNESS = 34000.0
XIN_JOINT_DAMPING = 10.0
XIN_MOTOR_DAMPING = 33.28
XIN_MOTOR_INERTIA_TABLE1 = 7.34
XIN_RESONANCE_HZ = 21.0
XIN_GEAR_RATIO = 160.0
XIN_TORQUE_CONSTANT = 0.17
XIN_CURRENT_LIMIT = 10.0
XIN_RATE_HZ = 1000.0


def xin_bench_parameters(load_inertia: float = XIN_LOAD_INERTIA) -> TwoInertiaParameters:
    """Xin et al.'s modular drive joint with J_m chosen for the measured 21 Hz resonance (see module doc)."""
    motor_inertia = motor_inertia_for_resonance(XIN_LOAD_INERTIA, XIN_STIFFNESS, XIN_RESONANCE_HZ)
    return TwoInertiaParameters(
        motor_inertia=motor_inertia,
        load_inertia=float(load_inertia),
        stiffness=XIN_STIFFNESS,
        motor_damping=XIN_MOTOR_DAMPING,
        load_damping=XIN_LOAD_DAMPING,
        damping=XIN_JOINT_DAMPING,
    )


# Xin et al. 2020, Table 3 / section 3.3 PI gains (motor side) and Table 5 (link side).
XIN_MOTOR_KP, XIN_MOTOR_KI = 480.0, 2400.0
XIN_LINK_KP, XIN_LINK_KI = 168.0, 1200.0
