"""Liu et al. 2023: double-encoder compensation and a GMR residual model."""
