"""`placement-stream apply -f` and `delete -f`: the Kubernetes documents users already have, published as events.

`documents` reads files, directories and stdin; `convert` holds one converter per kind in an explicit registry
(`yunikorn` has the shim's rules for pods); `command` plans, prints (`--dry-run`) or publishes, and reports.
"""
