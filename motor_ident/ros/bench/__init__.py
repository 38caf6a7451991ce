"""Feedforward latency benchmarks through DDS (``motor-ident bench``).

Imports motor_ident.ros.wire, motor_ident.ros.runtime and motor_ident.ros.nodes.
"""
