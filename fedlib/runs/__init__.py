"""Computing and storing runs: run keys, the local cache, the published store and its
confirmation over edits, the rows a published run keeps, the paper tiers' grid cuts, and
the machine and environment a run records."""
