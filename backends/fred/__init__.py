"""The FRED switch compiler (``collc export --target fred``, docs/fred.md).

A Program of in-network flows on ``fred:N`` (or ``switch:N,innet=yes``) becomes, per phase
(the flows active together) and per physical switch, the states of the µSwitches of its
FRED_m(P) network and each flow's colour per level: `compile_fred` decides, `export` writes
the versioned JSON folder and `read_fred` loads one back for the replay.
"""
