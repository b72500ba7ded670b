"""Example deployers: programs that act on the processor's decisions (see the README's "Example deployer")."""
