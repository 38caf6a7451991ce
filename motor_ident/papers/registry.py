"""The reproduction of each paper, by short name (``motor-ident reproduce <paper>``).

Importing this module imports every reproduction (scipy.signal and scipy.stats among them), so the
command line imports it only when a paper is run; `motor_ident.papers.reproduction.PAPERS` lists the
names cheaply.
"""

from __future__ import annotations

from collections.abc import Callable

from motor_ident.errors import ConfigError
from motor_ident.papers.guedelha.reproduce import reproduce as guedelha
from motor_ident.papers.kolathaya.reproduce import reproduce as kolathaya
from motor_ident.papers.liu.reproduce import reproduce as liu
from motor_ident.papers.reproduction import PAPERS, ReproduceOptions, Reproduction
from motor_ident.papers.szabo.reproduce import reproduce as szabo
from motor_ident.papers.xin.reproduce import reproduce as xin

ReproduceFn = Callable[[ReproduceOptions], Reproduction]

REPRODUCTIONS: dict[str, ReproduceFn] = {
    "guedelha": guedelha,
    "kolathaya": kolathaya,
    "liu": liu,
    "szabo": szabo,
    "xin": xin,
}


def reproduction(name: str) -> ReproduceFn:
    """The reproduction function of paper ``name``.

    Raises:
        ConfigError: no reproduction of that name.
    """
    if name not in REPRODUCTIONS:
        raise ConfigError(f"paper {name!r}: expected one of {list(PAPERS)}")
    return REPRODUCTIONS[name]
