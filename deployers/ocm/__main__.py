import sys

from deployers.ocm.deployer import main

sys.exit(main())
