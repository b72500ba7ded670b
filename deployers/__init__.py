"""Example deployers: programs that act on the processor's decisions (docs/examples.md, "Example deployer")."""
