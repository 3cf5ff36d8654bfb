"""The `toolc` commands: the only layer above `pipeline.py` (imports run one way: commands → pipeline → stages).

    support.py        exit codes, diagnostic printing, the inputs every command takes (PATHs or -c), the guard
    compile.py        toolc compile
    check.py          toolc check · toolc diff
    explain.py        toolc explain
    live.py           toolc record · toolc list · toolc health
    pytest_plugin.py  the pytest11 plugin (`toolc_tools`, `toolc_snapshot`)
"""
