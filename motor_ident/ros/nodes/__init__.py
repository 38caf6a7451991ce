"""The ROS 2 nodes (simulator, identifiers, feedforward, excitation, decoupler, controllers) and their
node-only helpers. Imports motor_ident.ros.wire and motor_ident.ros.runtime only."""
