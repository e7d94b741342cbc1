import sys

from export.annotation.cli import main

sys.exit(main())
