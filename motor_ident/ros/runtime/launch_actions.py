"""Launch actions of motor_ident's launch files: a managed node configured and activated unless told not to.

`managed_node` starts a node as launch_ros's ``LifecycleNode`` and, when the launch argument
``autostart`` is true (the default of every launch file), emits its ``configure`` transition and,
once it reaches ``inactive``, its ``activate`` transition, as Nav2's lifecycle manager does. With
``autostart:=false`` the node waits unconfigured for the robot's own lifecycle manager (or
``ros2 lifecycle set /feedforward configure``). A node that refuses to configure stays
unconfigured and is not activated; its log says why (``refusing to configure: ...``).
"""

from __future__ import annotations

from typing import Any

from launch.actions import EmitEvent, RegisterEventHandler
from launch.conditions import IfCondition
from launch.events import matches_action
from launch.substitutions import LaunchConfiguration
from launch_ros.actions import LifecycleNode
from launch_ros.event_handlers import OnStateTransition
from launch_ros.events.lifecycle import ChangeState
from lifecycle_msgs.msg import Transition


def managed_node(executable: str, **kwargs: Any) -> list[Any]:
    """The actions starting motor_ident's node ``executable`` as a lifecycle node, configured and
    activated when the launch argument ``autostart`` is true. ``kwargs`` go to ``LifecycleNode``
    (``parameters``, ``condition``, ...)."""
    node = LifecycleNode(
        package="motor_ident", executable=executable, name=executable, namespace="", output="screen", **kwargs
    )
    autostart = IfCondition(LaunchConfiguration("autostart"))

    def transition(transition_id: int, **condition: Any) -> EmitEvent:
        event = ChangeState(lifecycle_node_matcher=matches_action(node), transition_id=transition_id)
        return EmitEvent(event=event, **condition)

    activate_when_inactive = RegisterEventHandler(
        OnStateTransition(
            target_lifecycle_node=node,
            start_state="configuring",
            goal_state="inactive",
            entities=[transition(Transition.TRANSITION_ACTIVATE)],
        ),
        condition=autostart,
    )
    return [node, activate_when_inactive, transition(Transition.TRANSITION_CONFIGURE, condition=autostart)]
