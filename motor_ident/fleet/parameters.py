"""Names of base parameters in the fleet's store, and the joint each one belongs to.

A base parameter is named after its independent column (``elbow.fv``, ``forearm_link.mz``); its
full expression (``BaseParameters.expressions``) is kept beside it. Its joint is the joint named
by the column (friction, rotor inertia) or the joint that moves the column's link.
"""

from __future__ import annotations

from dataclasses import dataclass

from motor_ident.core.rigid_body.base_params import BaseParameters
from motor_ident.core.rigid_body.model import RobotModel


@dataclass(frozen=True)
class ParameterLabel:
    """One base parameter: ``name`` (its independent column), ``joint`` and full ``expression``."""

    name: str
    joint: str
    expression: str


def parameter_labels(base: BaseParameters, robot: RobotModel) -> list[ParameterLabel]:
    """The label of every base parameter, in the order of the base vector (length r)."""
    joint_of = dict(zip(robot.body_names, robot.joint_names)) | {j: j for j in robot.joint_names}
    labels = []
    for k, expression in zip(base.independent, base.expressions()):
        name = base.names[int(k)]
        owner, _, _ = name.rpartition(".")
        labels.append(ParameterLabel(name=name, joint=joint_of.get(owner, owner), expression=expression))
    return labels
