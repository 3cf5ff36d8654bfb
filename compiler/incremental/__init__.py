"""Incremental compiles: what a compile may reuse from the last one, keyed by content and by toolc itself.

    identity.py   toolc's own identity (its code, templates, version and the libraries whose output it embeds)
    store.py      cache files beside the output folder: a versioned envelope, read back only when it is ours
    project.py    the whole project: inputs → output hashes, so an unchanged project is proved unchanged cheaply

Every cache key includes `identity.toolc_identity()`, so a cache written by another toolc is never trusted; a
cache that is unreadable or not ours is ignored with a note (TC140) and the work is done again.
"""
