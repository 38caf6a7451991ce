"""Process and lifecycle runtime of the nodes: entry points, stop handling, lifecycle, parameters, QoS,
real-time settings, lockstep, node processes and the scenario runner with its recorder.

Imports only motor_ident.ros.wire; the entry points and the runner name the nodes by module string
and import them when a node starts.
"""
