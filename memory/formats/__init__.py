"""Memory file layouts: reading them in (import) and writing them out (export).

`lines` is the line grammar shared with compiled memory; `nightwatch` reads the Night Watch
layout; `importer` and `exporter` move whole trees in and out of the store.
"""
