"""The Foxglove monitor node, its WebSocket handshake, parameter bridge and layout, and a minimal client.

Imports motor_ident.ros.wire, motor_ident.ros.runtime and motor_ident.ros.recording.
"""
