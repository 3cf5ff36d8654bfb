"""The router package generator: `python/toolc_router/` (static modules copied, `_tables` baked).
"""
