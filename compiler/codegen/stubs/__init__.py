"""The stubs generator: one typed package per source (`python/<source>/`: pydantic models and functions).
"""
