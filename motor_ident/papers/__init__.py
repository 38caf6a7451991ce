"""The five papers motor_ident implements: bench data, experiments, reproductions."""
