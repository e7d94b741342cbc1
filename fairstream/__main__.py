"""``python -m fairstream``: the ``fairstream`` command."""

import sys

from fairstream.cli import main

sys.exit(main())
