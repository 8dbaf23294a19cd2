"""Warp's own examples as standing clients: every example in the installed wheel that differentiates, run on the
CPU in each of the package's modes and compared with stock Warp (``python -m warp_zerostore warp-examples``).

`discover` finds the examples and their short arguments by reading their source; `probe` is one run in a
process of its own (a script: in the stock mode it imports nothing of the package); `runner` runs the modes and
compares them; `report` prints the table and the JSON.
"""
