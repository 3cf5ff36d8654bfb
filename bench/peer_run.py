"""One peer measurement in a fresh process (run under /usr/bin/time -v by the benchmarks).

modes:
  json FILE       json.loads + json.dumps: the floor any tool that reads the document pays
  jsonref FILE    jsonref.replace_refs(proxies=False, lazy_load=False) + json.dumps: full inlining
                  (fails on cyclic documents such as Stripe's: that is the point of the comparison)
"""

import json
import sys

mode, path = sys.argv[1], sys.argv[2]
with open(path, "rb") as handle:
    document = json.loads(handle.read())
if mode == "json":
    json.dumps(document)
elif mode == "jsonref":
    import jsonref

    resolved = jsonref.replace_refs(document, proxies=False, lazy_load=False)
    try:
        json.dumps(resolved)
    except (ValueError, RecursionError) as exc:
        print(f"jsonref: {type(exc).__name__}: {str(exc)[:120]}", file=sys.stderr)
        sys.exit(1)
else:
    sys.exit(f"unknown mode {mode}")
