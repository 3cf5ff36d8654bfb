"""Incremental compiles: what a compile may reuse from the last one, keyed by content and by toolc itself.

    identity.py   toolc's own identity (its code, templates, version and the libraries whose output it embeds)
    store.py      cache files beside the output folder: a versioned envelope, read back only when it is ours
    project.py    the whole project: inputs → output hashes, so an unchanged project is proved unchanged cheaply

The stages keep their own reuse beside their code, on this package's store: `providers/reuse.py` (each tool's
lowering per target), `codegen/stubs/chunk_reuse.py` (each chunk of generated models) and
`codegen/stubs/package_reuse.py` (a source's models whole, and tools.py in pieces).

Every cache key includes `identity.toolc_identity()`, so a cache written by another toolc is never trusted; a
cache that is unreadable or not ours is ignored with a note (TC140) and the work is done again.
"""
