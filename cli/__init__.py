"""The `placement-stream` command line: the service's commands (streams/cli.py) and the client tools that talk to
a running system (`apply`, `delete`, `watch`, `explain --url`), the local broker's commands and the demo."""
