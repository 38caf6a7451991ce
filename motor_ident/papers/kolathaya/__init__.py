"""Kolathaya et al. 2016: online identification of Valkyrie with an R2 gate."""
